"""Produce events to Kafka and know they arrived: every send is checked at flush."""

from __future__ import annotations

from typing import Any

from fusion.core import KafkaSettings
from fusion.kafka import client as kafka_client
from fusion.kafka.errors import PublishError


def produce(
    producer: Any, topic: str, key: str | None, value: bytes | None, **options: Any
) -> None:
    """``producer.produce``, waiting while librdkafka's local queue is full instead of failing."""
    while True:
        try:
            producer.produce(
                topic, key=key.encode() if key is not None else None, value=value, **options
            )
            return
        except BufferError:
            # Sending faster than the broker takes: let librdkafka deliver some first.
            producer.poll(0.1)


class Publisher:
    """An idempotent producer whose :meth:`flush` raises unless every record was confirmed."""

    def __init__(self, settings: KafkaSettings, options: dict[str, Any] | None = None) -> None:
        self._producer = kafka_client.producer(settings, options)
        self._errors: list[tuple[str, str]] = []
        self._topics: set[str] = set()  # written to since the last flush
        self.sent = 0

    def send(self, topic: str, key: str | None, value: bytes) -> None:
        produce(self._producer, topic, key, value, on_delivery=self._on_delivery)
        self._topics.add(topic)
        self.sent += 1
        # Serve delivery callbacks so the local queue never fills up.
        self._producer.poll(0)

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append((message.topic(), str(error)))

    def flush(self, timeout: float = 120.0) -> None:
        remaining = self._producer.flush(timeout)
        errors, self._errors = self._errors, []
        topics, self._topics = self._topics, set()
        if remaining:
            where = ", ".join(sorted(topics))
            raise PublishError(where, remaining, f"still queued after {timeout:.0f} s")
        if errors:
            topic, detail = errors[0]
            raise PublishError(topic, len(errors), detail)
