"""Kafka helpers for acks: the records an indexer publishes, keyed by join key."""

from __future__ import annotations

from collections.abc import Iterable

from acks.contract import Ack

AckRecord = tuple[str, str | None, bytes]  # topic, key, value


def ack_records(topic: str, acks: Iterable[Ack]) -> list[AckRecord]:
    """One Kafka record per ack, keyed by join key so that a key's acks share a partition."""
    return [(topic, ack.key, ack.to_bytes()) for ack in acks]
