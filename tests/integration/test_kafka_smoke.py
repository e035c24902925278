"""confluent-kafka on the real broker: plain and transactional produce, read_committed consume."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from fusion.core.settings import Settings
from fusion.kafka import client as kafka_client


def _consume_all(settings: Settings, topic: str, timeout: float = 30.0) -> list[bytes]:
    """Every record a read_committed consumer sees, read until its position reaches the end.

    The end is each partition's end offset when the read starts; aborted
    records and transaction markers lie below it, so a consumer that reached
    it has seen everything it ever will of what was written before.
    """
    consumer = kafka_client.consumer(settings.kafka, group_id=f"g-{uuid.uuid4().hex}")
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions]
        ends = {
            tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions
        }
        consumer.assign(partitions)
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while any(
            0 < ends[position.partition] > position.offset
            for position in consumer.position(partitions)
        ):
            assert time.monotonic() < deadline, f"did not reach the end of {topic}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
        return values
    finally:
        consumer.close()


def _end_offset(settings: Settings, topic: str) -> int:
    consumer = kafka_client.consumer(settings.kafka, group_id=f"g-{uuid.uuid4().hex}")
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def test_produce_and_consume(settings: Settings, make_topic: Callable[..., str]) -> None:
    topic = make_topic("smoke", partitions=2)
    producer = kafka_client.producer(settings.kafka)
    for i in range(20):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0

    values = _consume_all(settings, topic)

    assert sorted(values) == sorted(f"v{i}".encode() for i in range(20))


def test_read_committed_sees_only_committed_transactions(
    settings: Settings, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("txn")
    producer = kafka_client.producer(
        settings.kafka, {"transactional.id": f"smoke-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(30)

    producer.begin_transaction()
    producer.produce(topic, value=b"aborted-1")
    producer.produce(topic, value=b"aborted-2")
    # Flush first: an abort purges what is still queued in the client, and then
    # the broker's log would hold no aborted record for the reader to skip.
    assert producer.flush(30) == 0
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, value=b"committed-1")
    producer.produce(topic, value=b"committed-2")
    producer.commit_transaction(30)

    # Read to the end of the partition, past both transactions: only the committed ones show.
    values = _consume_all(settings, topic)

    # The log holds all four records and both transaction markers.
    assert _end_offset(settings, topic) == 6

    assert values == [b"committed-1", b"committed-2"]


def test_publisher_waits_when_its_local_queue_is_full(
    settings: Settings, make_topic: Callable[..., str]
) -> None:
    from fusion.kafka.producer import Publisher

    topic = make_topic("full")
    # 100k messages is librdkafka's default queue; a 400k-record benchmark overran it.
    publisher = Publisher(settings.kafka, {"queue.buffering.max.messages": 10})

    for i in range(500):
        publisher.send(topic, str(i), b"v%d" % i)
    publisher.flush()

    assert sorted(_consume_all(settings, topic)) == sorted(b"v%d" % i for i in range(500))
