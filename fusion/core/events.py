"""Event contracts shared by the stages: dead letters, ready events, and their encoding.

Every event is compact UTF-8 JSON with ISO-8601 UTC timestamps (``...Z``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from fusion.core import codec

Stage = Literal["indexer", "counter", "enricher"]

# What a dead letter keeps of an original too large to travel whole (its
# SHA-256 and size name the whole one, which stays in its source topic or index).
ORIGINAL_KEPT_BYTES = 64 * 1024


# Cached: a task stamps every ack of its batch with the same time, and formats it per ack
# twice (the ack, the counter's copy); uncached that was 8 % of the indexer task's CPU.
@functools.lru_cache(maxsize=256)
def iso_utc(value: datetime) -> str:
    """ISO-8601 in UTC with a ``Z`` suffix (naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def iso_from_ms(ms: int) -> str:
    """Epoch milliseconds (Spark's processing time, timers) as ISO-8601 UTC."""
    return iso_utc(datetime.fromtimestamp(ms / 1000, UTC))


def check_timestamp(value: str) -> str:
    """An event's timestamp: ISO-8601 with a time and a UTC offset, as Fusion writes them.

    Elasticsearch's date type also takes epoch milliseconds or a bare date;
    the enricher computes with these timestamps, so they are checked where
    an event is read.
    """
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO-8601 timestamp") from None
    if "T" not in value or parsed.tzinfo is None:
        raise ValueError(f"{value!r} needs a time and a UTC offset (e.g. 2026-01-01T12:00:00Z)")
    return value


Timestamp = Annotated[str, AfterValidator(check_timestamp)]


def now_utc() -> datetime:
    return datetime.now(UTC)


def now_iso() -> str:
    return iso_utc(now_utc())


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, the encoding of every Fusion event."""
    return codec.dumps(value)


class DeadLetter(BaseModel):
    """A record Fusion could not use, with why, and the original bytes to replay it.

    ``original`` is the record's value decoded as UTF-8, or base64 when it is
    not valid UTF-8 (``original_encoding`` says which). A dead letter that
    would not fit in a Kafka message carries only the first
    :data:`ORIGINAL_KEPT_BYTES` of it: ``original_size`` and ``original_sha256``
    then name the whole original (both None when it is whole).
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
    original_size: int | None = None
    original_sha256: str | None = None

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

    def original_bytes(self) -> bytes | None:
        """The original record's bytes, as far as this dead letter carries them."""
        if self.original is None:
            return None
        if self.original_encoding == "base64":
            return base64.b64decode(self.original)
        return self.original.encode()

    def cut(self, keep: int = ORIGINAL_KEPT_BYTES) -> DeadLetter:
        """This dead letter with the first ``keep`` bytes of its original, and the whole
        original's size and SHA-256."""
        whole = self.original_bytes()
        if whole is None or len(whole) <= keep or self.original_size is not None:
            return self
        head = whole[:keep]
        if self.original_encoding == "utf-8":
            text = head.decode("utf-8", errors="ignore")  # no half character at the cut
        else:
            text = base64.b64encode(head).decode()
        return self.model_copy(
            update={
                "original": text,
                "original_size": len(whole),
                "original_sha256": hashlib.sha256(whole).hexdigest(),
            }
        )


def dead_letter_records(
    topic: str, letters: Iterable[DeadLetter], limit: int | None = None
) -> list[tuple[str, str | None, bytes | None]]:
    """The dead-letter topic's Kafka records (key = join key where known).

    A dead letter larger than ``limit`` bytes (a Kafka message's) travels with
    its original cut (:meth:`DeadLetter.cut`): the pipeline goes on.
    """
    records: list[tuple[str, str | None, bytes | None]] = []
    for letter in letters:
        value = letter.to_bytes()
        if limit is not None and len(value) + len((letter.key or "").encode()) > limit:
            # Escaping may grow the kept bytes up to six times (\\u0001): keep few enough.
            value = letter.cut(min(ORIGINAL_KEPT_BYTES, limit // 8)).to_bytes()
        records.append((topic, letter.key, value))
    return records


def _encode_original(value: bytes | None) -> tuple[str | None, Literal["utf-8", "base64"]]:
    if value is None:
        return None, "utf-8"
    try:
        return value.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(value).decode(), "base64"


class RefPart(BaseModel):
    """The dimension row a key's slot holds (docs/dimensions.md): the id its referrer names
    (None: it names none), the row's version (0: no row), and how often the slot changed
    (it adds to the enriched version, which so grows with every change of the slot); a
    chain's, the versions of the rows between (``via``), which order its acks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None
    version: int = 0
    changes: int = 0
    via: tuple[int, ...] = ()


class ReadyEvent(BaseModel):
    """The counter's word that a key's sources are searchable and can be enriched.

    ``kind`` is ``ready`` (on the ready topic, once per key: every source, or
    every required one once the deadline passed), ``updated`` (on the updates
    topic: a source of an already fired key changed, arrived late or was
    deleted) or ``deleted`` (on the updates topic: the key's enriched document
    goes, its sources deleted). ``sources`` are those whose documents are
    there, ``deleted`` those whose rows were deleted; ``versions`` every
    source's newest version the counter had seen, a deleted one's too; ``refs``
    each dimension's slot (the row to look up, by its id).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    sources: list[str]
    first_ack_at: Timestamp
    fired_at: Timestamp
    kind: Literal["ready", "updated", "deleted"] = "ready"
    versions: dict[str, int] = {}
    deleted: list[str] = []
    refs: dict[str, RefPart] = {}

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


class IncompleteEvent(BaseModel):
    """A key's deadline passed while required sources were still missing (incomplete topic).

    ``reason`` is ``timeout`` (a required source's own timeout passed) or
    ``state_ttl`` (a required source without one was waited for ``state_ttl``).
    ``first_ack_at`` is null, and ``present`` empty, only for a key whose state
    was gone before its deadline was handled (docs/guarantees.md). ``refs``
    names each dimension's row the key waited for: its id (or none named), and
    version 0 while the row is not there.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    present: list[str]
    missing: list[str]
    first_ack_at: Timestamp | None
    expired_at: Timestamp
    versions: dict[str, int] = {}
    reason: Literal["timeout", "state_ttl"] = "timeout"
    refs: dict[str, RefPart] = {}

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()
