"""Pure transforms of the indexer: Kafka records in, keyed documents or dead letters out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fusion.core.events import DeadLetter

MAX_KEY_BYTES = 512  # Elasticsearch rejects _id values longer than 512 bytes.


@dataclass(frozen=True)
class RawRecord:
    """A Kafka record as Spark's Kafka source hands it over."""

    value: bytes | None
    topic: str
    partition: int
    offset: int

    @property
    def where(self) -> tuple[str, int, int]:
        return (self.topic, self.partition, self.offset)


@dataclass(frozen=True)
class SourceRecord:
    """A parsed source document, keyed by its join key."""

    key: str
    doc: dict[str, Any]
    topic: str
    partition: int
    offset: int
    original: bytes
    digest: str  # of the content (content_digest), for the ack

    @property
    def where(self) -> tuple[str, int, int]:
        return (self.topic, self.partition, self.offset)

    @property
    def source(self) -> bytes:
        """What Elasticsearch stores: the record's own bytes, when they are UTF-8 JSON.

        Re-serializing the parsed record cost the indexer's task a sixth of its
        CPU. The bytes are the same document; Elasticsearch refuses one that
        repeats a field (``Duplicate field``, a dead letter with that reason),
        which Python's parser would have let pass with the last value. JSON in
        UTF-16 or UTF-32 goes as parsed, re-encoded in UTF-8 (``parse`` made sure
        it can be); a number JSON cannot spell (``1e999`` read as infinity) goes
        as ``Infinity``, which Elasticsearch refuses: a dead letter with its reason.
        """
        if json.detect_encoding(self.original) == "utf-8":
            return self.original
        return json.dumps(self.doc, ensure_ascii=False, separators=(",", ":")).encode()

    @property
    def version(self) -> int:
        """The document's external version: its Kafka offset, plus one (versions start at 1).

        A key's records share a partition when they are produced keyed by the join
        key, so a later record of the key always has a higher version, and a
        replay of an older record can never overwrite a newer document.
        """
        return self.offset + 1


def parse(raw: RawRecord, source: str, key_field: str, max_bytes: int) -> SourceRecord | DeadLetter:
    """Decode one record, or say why it cannot be indexed."""

    def dead(reason: str, key: str | None = None) -> DeadLetter:
        return DeadLetter.of(reason, "indexer", source, raw.where, raw.value, key)

    if raw.value is None:
        return dead("empty value (null Kafka record value)")
    if len(raw.value) > max_bytes:
        return dead(f"record of {len(raw.value)} bytes exceeds the {max_bytes}-byte limit")
    try:
        doc = json.loads(raw.value)
    except (ValueError, RecursionError) as exc:
        # ValueError: not JSON, not Unicode, or a number Python will not convert (an
        # integer of over 4,300 digits); RecursionError: nested deeper than the parser goes.
        return dead(f"invalid JSON: {_first_line(exc)}")
    if not isinstance(doc, dict):
        return dead(f"not a JSON object (got {type(doc).__name__})")
    if key_field not in doc:
        return dead(f"missing key field {key_field!r}")
    key = doc[key_field]
    if key is None:
        return dead(f"key field {key_field!r} is null")
    if isinstance(key, bool) or not isinstance(key, str | int):
        return dead(f"key field {key_field!r} must be a string or an integer, got {_short(key)}")
    try:
        # An integer key is its decimal text: 42 and "42" are the same key (docs/contracts.md).
        key_text = str(key)
        key_bytes = key_text.encode()
    except (ValueError, RecursionError):
        return dead(f"key field {key_field!r} is not valid Unicode (an unpaired surrogate)")
    if not key_text or len(key_bytes) > MAX_KEY_BYTES:
        return dead(f"key field {key_field!r} must be 1 to {MAX_KEY_BYTES} bytes long")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in key_text):
        # Control characters have no place in an id; the counter reserves one such key.
        return dead(f"key field {key_field!r} contains a control character")
    try:
        digest = content_digest(doc)
    except (ValueError, RecursionError) as exc:
        # A string with an unpaired surrogate ("\ud800") parses, but is no Unicode text:
        # neither Elasticsearch nor the ack could carry it.
        return dead(f"not valid Unicode text: {_first_line(exc)}", key_text)
    return SourceRecord(key_text, doc, raw.topic, raw.partition, raw.offset, raw.value, digest)


def _first_line(exc: BaseException) -> str:
    """An exception's message, one line of at most 200 characters, whatever it held."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _short(value: Any) -> str:
    """A value for a reason: its repr, cut to 100 characters (a key may be any JSON)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= 100 else text[:97] + "..."


def latest_per_key(records: Iterable[SourceRecord]) -> list[SourceRecord]:
    """Keep one record per key: the one written last (highest partition offset).

    A key's records share a partition when producers key them by join key;
    otherwise the highest (partition, offset) wins, which is at least stable
    across replays of the same batch.
    """
    latest: dict[str, SourceRecord] = {}
    for record in records:
        current = latest.get(record.key)
        if current is None or (record.partition, record.offset) > (
            current.partition,
            current.offset,
        ):
            latest[record.key] = record
    return list(latest.values())


def content_digest(doc: dict[str, Any]) -> str:
    """A short hash of a document's content, independent of key order and whitespace."""
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
