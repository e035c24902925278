"""Kafka helpers for acks: records keyed by join key to publish, and reading them back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from confluent_kafka import KafkaException

from acks.contract import Ack, AckError
from fusion import clients
from fusion.output import OutRecord
from fusion.settings import KafkaSettings


def ack_records(topic: str, acks: Iterable[Ack]) -> list[OutRecord]:
    """One Kafka record per ack, keyed by join key so that a key's acks share a partition."""
    return [(topic, ack.key, ack.to_bytes()) for ack in acks]


def read_acks(
    settings: KafkaSettings, topic: str, group_id: str, idle_timeout: float = 5.0
) -> Iterator[Ack | AckError]:
    """Every committed ack on ``topic`` from the beginning, until none arrived for ``idle_timeout``.

    Invalid records are yielded as :class:`AckError` rather than skipped.
    """
    consumer = clients.kafka_consumer(settings, group_id)
    consumer.subscribe([topic])
    try:
        while True:
            message = consumer.poll(idle_timeout)
            if message is None:
                return
            if message.error():
                raise KafkaException(message.error())
            try:
                yield Ack.from_bytes(message.value() or b"")
            except AckError as error:
                yield error
    finally:
        consumer.close()
