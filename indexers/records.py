"""Pure transforms of the indexer: Kafka records in, keyed documents or dead letters out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fusion.core import AVRO_FORMATS, RESERVED_FIELD, DeadLetter, SourceFormat, codec, key_spec
from indexers.avro import NotAvro, Schemas, decode
from indexers.changes import NotAChange, change_of
from indexers.keys import InvalidKey, key_of
from indexers.types import Declared, type_error

CHANGE_FORMATS = ("debezium", "debezium-avro")  # a change event per record (indexers/changes.py)


@dataclass(frozen=True)
class RawRecord:
    """A Kafka record as Spark's Kafka source hands it over."""

    value: bytes | None
    topic: str
    partition: int
    offset: int
    key: bytes | None = None  # the Kafka record key
    timestamp_ms: int | None = None  # the Kafka record's timestamp

    @property
    def where(self) -> tuple[str, int, int]:
        return (self.topic, self.partition, self.offset)


@dataclass(frozen=True)
class Tombstone:
    """A record without a value on a change-event topic: the compacted topic's delete."""

    where: tuple[str, int, int]


@dataclass(frozen=True)
class SourceRecord:
    """A parsed source document, keyed by its join key."""

    key: str
    doc: dict[str, Any]
    topic: str
    partition: int
    offset: int
    original: bytes
    digest: str | None  # of the content (content_digest), for the ack; None for a delete
    stored_key: bool = False  # the key goes into the document too (fusion.key)
    # A change event's delete: the document written is a tombstone (see :meth:`source`);
    # ``key_field`` names the top-level field it keeps the key in, if the source has one.
    deleted: bool = False
    key_field: str | None = None
    # The ids of the dimension rows it names (indexers/dimensions/references.py), in fusion.refs.
    refs: Mapping[str, str] = field(default_factory=dict)
    # Its Kafka timestamp (epoch ms), kept in fusion.ts: where a key's latency starts.
    record_ms: int | None = None
    # A children source's row (indexers/children.py): the parent key it names, and its place
    # as kept in its document's fusion object.
    parent: str | None = None
    child: Mapping[str, Any] = field(default_factory=dict)

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
        kept = self._kept()
        if self.deleted:
            # Indexed, not deleted: its version keeps ordering the source's writes (a late
            # older write is refused as stale), with no gc_deletes window to outlive.
            own: Any = {"deleted": True, "key": self.key} | kept
            tombstone = {self.key_field: self.key} if self.key_field else {}
            return json.dumps({**tombstone, RESERVED_FIELD: own}).encode()
        as_read = bool(self.original) and json.detect_encoding(self.original) == "utf-8"
        if (
            self.stored_key
            or self.refs
            or self.child
            or (kept and (RESERVED_FIELD in self.doc or not as_read))
        ):
            own = self.doc.get(RESERVED_FIELD)
            doc = {**self.doc, RESERVED_FIELD: {**(own if isinstance(own, dict) else {}), **kept}}
            return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        if as_read:
            return _with_own(self.original, kept) if kept else self.original
        return json.dumps(self.doc, ensure_ascii=False, separators=(",", ":")).encode()

    def _kept(self) -> dict[str, Any]:
        """What Fusion keeps in the document's own object: its key, the rows it names, when."""
        kept: dict[str, Any] = {"key": self.key} if self.stored_key else {}
        kept |= {"refs": dict(self.refs)} if self.refs else {}
        kept |= dict(self.child)
        return kept | ({"ts": self.record_ms} if self.record_ms is not None else {})

    @property
    def version(self) -> int:
        """The document's external version: its Kafka offset, plus one (versions start at 1).

        A key's records share a partition when they are produced keyed by the join
        key, so a later record of the key always has a higher version, and a
        replay of an older record can never overwrite a newer document.
        """
        return self.offset + 1


def _with_own(original: bytes, kept: Mapping[str, Any]) -> bytes:
    """The record's own bytes with Fusion's object added, without parsing them again.

    Only for a record that is a UTF-8 JSON object without a ``fusion`` field of
    its own: its last non-blank byte is the object's closing brace.
    """
    body = original.rstrip()[:-1].rstrip()
    comma = b"" if body.endswith(b"{") else b","
    own = codec.dumps({RESERVED_FIELD: kept})[1:]
    return body + comma + own


def is_tombstone(doc: Mapping[str, Any]) -> bool:
    """Whether a source document is the tombstone of a deleted row (see
    :meth:`SourceRecord.source`), and nothing else."""
    own = doc.get(RESERVED_FIELD)
    if not isinstance(own, dict) or own.get("deleted") is not True:
        return False
    # A deleted child keeps where it was (indexers/children.py): "before".
    return set(own) - {"ts", "before"} == {"deleted", "key"}


Parsed = SourceRecord | Tombstone | DeadLetter


def parse(
    raw: RawRecord,
    source: str,
    key: str,
    max_bytes: int,
    fmt: SourceFormat = "json",
    store_key: bool = False,
    schemas: Schemas | None = None,
    declared: Declared | None = None,
    parent: str | None = None,
) -> Parsed:
    """Decode one record, or say why it cannot be indexed.

    ``key``: where the join key is (:mod:`indexers.keys`); ``fmt``: the value's
    format, ``json`` (the document itself), ``debezium`` (a change event whose
    row is the document, :mod:`indexers.changes`), ``avro`` (a registry's wire
    format, read with ``schemas``: :mod:`indexers.avro`) or ``debezium-avro`` (a
    change event in Avro); ``declared``: the fields to check and the optional
    ones (``strict``, :mod:`indexers.types`); ``store_key``: the document
    keeps its key in ``fusion.key`` (its key is no top-level field of it).
    """

    def dead(reason: str, key: str | None = None) -> DeadLetter:
        return DeadLetter.of(reason, "indexer", source, raw.where, raw.value, key)

    if raw.value is None:
        if fmt in CHANGE_FORMATS:
            return Tombstone(raw.where)  # how a compacted topic forgets a deleted row
        return dead("empty value (null Kafka record value)")
    if len(raw.value) > max_bytes:
        return dead(f"record of {len(raw.value)} bytes exceeds the {max_bytes}-byte limit")
    try:
        if schemas and fmt in AVRO_FORMATS:
            doc = decode(raw.value, schemas)
        else:
            doc = codec.loads(raw.value)
    except NotAvro as exc:
        return dead(str(exc))
    except (ValueError, RecursionError) as exc:
        # ValueError: not JSON, not Unicode, or a number Python will not convert (an
        # integer of over 4,300 digits); RecursionError: nested deeper than the parser goes.
        return dead(f"invalid JSON: {_first_line(exc)}")
    deleted = False
    if fmt in CHANGE_FORMATS:
        try:
            change = change_of(doc)
        except NotAChange as exc:
            return dead(str(exc))
        doc, deleted = change.row, change.deleted
    elif not isinstance(doc, dict):
        return dead(f"not a JSON object (got {type(doc).__name__})")
    spec = key_spec(key)
    try:
        key_text = key_of(spec, doc, raw.key)
    except InvalidKey as exc:
        return dead(str(exc))
    where = (raw.topic, raw.partition, raw.offset)
    if declared is not None and not deleted and (wrong := type_error(doc, *declared)):
        return dead(wrong, key_text)
    parent_key = None
    if parent is not None and not deleted:
        try:
            parent_key = key_of(key_spec(parent), doc, raw.key)
        except InvalidKey as exc:
            return dead(f"no parent: {exc}", key_text)
    if deleted:
        top = spec.path[0] if not spec.in_record_key and len(spec.path) == 1 else None
        return SourceRecord(
            key_text, doc, *where, b"", None, deleted=True, key_field=top,
            record_ms=raw.timestamp_ms,
        )  # fmt: skip
    try:
        digest = content_digest(doc)
    except RecursionError as exc:  # parsed (orjson goes 1,024 levels deep), too deep to write
        return dead(f"nested too deep: {_first_line(exc)}", key_text)
    except ValueError as exc:
        # A string with an unpaired surrogate ("\ud800") parses, but is no Unicode text:
        # neither Elasticsearch nor the ack could carry it.
        return dead(f"not valid Unicode text: {_first_line(exc)}", key_text)
    original = raw.value if fmt == "json" else b""
    return SourceRecord(
        key_text, doc, *where, original, digest, store_key, record_ms=raw.timestamp_ms,
        parent=parent_key,
    )  # fmt: skip


def _first_line(exc: BaseException) -> str:
    """An exception's message, one line of at most 200 characters, whatever it held."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


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
    return hashlib.sha256(codec.canonical(doc)).hexdigest()[:16]
