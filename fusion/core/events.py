"""Event contracts shared by the stages: dead letters, ready events, and their encoding.

Every event is compact UTF-8 JSON with ISO-8601 UTC timestamps (``...Z``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Stage = Literal["indexer", "counter", "enricher"]


def iso_utc(value: datetime) -> str:
    """ISO-8601 in UTC with a ``Z`` suffix (naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def iso_from_ms(ms: int) -> str:
    """Epoch milliseconds (Spark's processing time, timers) as ISO-8601 UTC."""
    return iso_utc(datetime.fromtimestamp(ms / 1000, UTC))


def now_utc() -> datetime:
    return datetime.now(UTC)


def now_iso() -> str:
    return iso_utc(now_utc())


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, the encoding of every Fusion event."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class DeadLetter(BaseModel):
    """A record Fusion could not use, with why, and the original bytes to replay it.

    ``original`` is the record's value decoded as UTF-8, or base64 when it is
    not valid UTF-8 (``original_encoding`` says which).
    """

    model_config = ConfigDict(frozen=True)

    reason: str
    stage: Stage
    source: str | None
    topic: str
    partition: int
    offset: int
    key: str | None = None
    original: str | None
    original_encoding: Literal["utf-8", "base64"] = "utf-8"
    failed_at: str

    @classmethod
    def of(
        cls,
        reason: str,
        stage: Stage,
        source: str | None,
        where: tuple[str, int, int],
        original: bytes | None,
        key: str | None = None,
    ) -> DeadLetter:
        """Build a dead letter for the record at ``where`` = (topic, partition, offset)."""
        text, encoding = _encode_original(original)
        topic, partition, offset = where
        return cls(
            reason=reason,
            stage=stage,
            source=source,
            topic=topic,
            partition=partition,
            offset=offset,
            key=key,
            original=text,
            original_encoding=encoding,
            failed_at=now_iso(),
        )

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


def dead_letter_records(
    topic: str, letters: Iterable[DeadLetter]
) -> list[tuple[str, str | None, bytes]]:
    """The dead-letter topic's Kafka records (key = join key where known)."""
    return [(topic, letter.key, letter.to_bytes()) for letter in letters]


def _encode_original(value: bytes | None) -> tuple[str | None, Literal["utf-8", "base64"]]:
    if value is None:
        return None, "utf-8"
    try:
        return value.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(value).decode(), "base64"


class ReadyEvent(BaseModel):
    """The counter's word that a key's sources are searchable and can be enriched.

    ``kind`` is ``ready`` (on the ready topic, once per key: every source, or
    every required one once the deadline passed) or ``updated`` (on the updates
    topic: a source of an already fired key changed or arrived late).
    ``versions`` are the source versions the counter had seen.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    sources: list[str]
    first_ack_at: str
    fired_at: str
    kind: Literal["ready", "updated"] = "ready"
    versions: dict[str, int] = {}

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


class IncompleteEvent(BaseModel):
    """A key's deadline passed while required sources were still missing (incomplete topic)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    present: list[str]
    missing: list[str]
    first_ack_at: str
    expired_at: str
    versions: dict[str, int] = {}

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()
