"""confluent-kafka on the real broker: plain and transactional produce, read_committed consume."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from fusion import clients
from fusion.settings import Settings


def _consume_all(
    settings: Settings, topic: str, expected: int, timeout: float = 30.0
) -> list[bytes]:
    consumer = clients.kafka_consumer(settings.kafka, group_id=f"g-{uuid.uuid4().hex}")
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        # Stop at `expected` records, or once the topic stayed empty for a while.
        idle_polls = 0
        while len(values) < expected and idle_polls < timeout:
            message = consumer.poll(1.0)
            if message is None:
                idle_polls += 1
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_produce_and_consume(settings: Settings, make_topic: Callable[..., str]) -> None:
    topic = make_topic("smoke", partitions=2)
    producer = clients.kafka_producer(settings.kafka)
    for i in range(20):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0

    values = _consume_all(settings, topic, expected=20)

    assert sorted(values) == sorted(f"v{i}".encode() for i in range(20))


def test_read_committed_sees_only_committed_transactions(
    settings: Settings, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("txn")
    producer = clients.kafka_producer(
        settings.kafka, {"transactional.id": f"smoke-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(30)

    producer.begin_transaction()
    producer.produce(topic, value=b"aborted-1")
    producer.produce(topic, value=b"aborted-2")
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, value=b"committed-1")
    producer.produce(topic, value=b"committed-2")
    producer.commit_transaction(30)

    # Ask for more than were committed: the consumer must not surface the aborted ones.
    values = _consume_all(settings, topic, expected=3, timeout=8)

    assert values == [b"committed-1", b"committed-2"]


def test_publisher_waits_when_its_local_queue_is_full(
    settings: Settings, make_topic: Callable[..., str]
) -> None:
    from fusion.publisher import Publisher

    topic = make_topic("full")
    # 100k messages is librdkafka's default queue; a 400k-record benchmark overran it.
    publisher = Publisher(settings.kafka, {"queue.buffering.max.messages": 10})

    for i in range(500):
        publisher.send(topic, str(i), b"v%d" % i)
    publisher.flush()

    assert sorted(_consume_all(settings, topic, 500)) == sorted(b"v%d" % i for i in range(500))
