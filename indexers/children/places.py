"""Children rows (docs/children.md): where each belongs, where it belonged, and whom to tell.

A children source's record is a row with its own key (``line_id``) that names
its parent's key (``order_id``). The indexer writes it under its own key and
keeps in its ``fusion`` object:

- ``parent``: the parent's key, a keyword the enrichment's search finds it by
  (a deleted row has none: no parent finds it any more);
- ``order``: a keyword that sorts as its ``order_by`` value does (:func:`order_value`);
- ``digest``: its content's, and ``before``: the parent and digest it had before this write.

After the write, it acks the parents whose children changed: the one it names,
and the one it left (moved to another parent, or deleted). Where it was comes
from Elasticsearch, read before the write, never from the event: PostgreSQL's
default replica identity gives Debezium no ``before`` row on an update. A
write this batch made already (an earlier chunk of the task, a failed attempt
now retried) is seen through: ``before`` then says where the row was as of
the batches committed, so no parent it left goes untold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from elasticsearch import Elasticsearch

from acks import Ack
from fusion.core import RESERVED_FIELD, key_spec
from fusion.elastic import Confirmed, RetryPolicy, call_with_retries, mget_docs
from fusion.observe import Metrics
from indexers import SourceRecord
from indexers.children.order import order_value

# What a child's document keeps of its place, in its ``fusion`` object.
CHILD_OWN = ("parent", "order", "digest", "before")


@dataclass(frozen=True)
class Place:
    """Where a child's document was before a write: its parent (None: none, or deleted) and
    content digest."""

    parent: str | None
    digest: str | None

    def as_stored(self) -> dict[str, Any]:
        return {"parent": self.parent, "digest": self.digest}


NOWHERE = Place(None, None)


@dataclass(frozen=True)
class Stored:
    """What Elasticsearch holds of a child before the write: its version, where it is now,
    and where it was before that version was written."""

    version: int
    place: Place
    before: Place


def placed(
    records: Sequence[SourceRecord], order_by: str, stored: Mapping[str, Stored], since: int
) -> list[SourceRecord]:
    """The records, each with its place kept in ``fusion`` (see the module docstring).

    ``order_by``: the path of the value children are ordered by (their key's, by default);
    ``stored``: what :func:`lookup` found of them, by their own key; ``since``: the first
    offset of the task's partition in this batch (:func:`previous_place`).
    """
    spec = key_spec(order_by)
    out = []
    for record in records:
        before = previous_place(stored.get(record.key), since)
        own: dict[str, Any] = {"before": before.as_stored()}
        if not record.deleted:
            value = _key_value(record.key) if spec.in_record_key else _at(record.doc, spec.path)
            own |= {"parent": record.parent, "order": order_value(value), "digest": record.digest}
        out.append(replace(record, child=own))
    return out


def _key_value(key: str) -> int | str:
    """A key read from the Kafka record key, as the value it was: an integer's decimal text
    is the integer (so that 9 sorts before 10)."""
    digits = key[1:] if key.startswith("-") else key
    return int(key) if digits.isdigit() and digits.isascii() else key


def previous_place(stored: Stored | None, since: int) -> Place:
    """Where a child was before this batch wrote it: its parents are told from there.

    Not there: nowhere. Written by this batch already (its version is of an
    offset from ``since`` on: an earlier chunk of this task, or an attempt of
    it that failed and is retried now, or a batch replayed): where it was
    before that write, so that a write whose acks were never published still
    tells the parent the child left. Else where it is, as of a committed batch.
    """
    if stored is None:
        return NOWHERE
    return stored.before if stored.version > since else stored.place


def parents_told(record: SourceRecord, before: Place) -> tuple[str | None, str | None]:
    """The parents a confirmed write changes: (the one it names, if its children changed;
    the one it left, if any)."""
    now = None if record.deleted else record.parent
    gained = (
        now if now is not None and (now, record.digest) != (before.parent, before.digest) else None
    )
    left = before.parent if before.parent is not None and before.parent != now else None
    return gained, left


def child_acks(
    source: str, confirmed: Iterable[Confirmed[SourceRecord]], acked_at: datetime
) -> list[Ack]:
    """One ack per parent whose children the confirmed writes changed, keyed by the parent.

    A parent told by many rows of one write is told once: the counter counts
    changes to re-enrich a key, not rows, and an order's lines come in
    together (a burst of 10 lines an order acked 10 times what it needed).
    The ack names the last row that changed the parent; ``deleted`` says
    whether that row left it.
    """
    told: dict[str, Ack] = {}
    for item in confirmed:
        record = item.record
        gained, left = parents_told(record, _before(record))
        for parent, gone in ((gained, False), (left, True)):
            if parent is None:
                continue
            topic, partition, offset = record.where
            told[parent] = Ack(
                key=parent, source=source, index=item.index, doc_id=record.key,
                seq_no=item.seq_no, primary_term=item.primary_term, version=item.version,
                topic=topic, partition=partition, offset=offset, acked_at=acked_at,
                digest=None, deleted=gone,
            )  # fmt: skip
    return list(told.values())


def _before(record: SourceRecord) -> Place:
    before = record.child.get("before") or {}
    return Place(before.get("parent"), before.get("digest"))


def lookup(
    es: Elasticsearch,
    index: str,
    keys: Sequence[str],
    retry: RetryPolicy,
    metrics: Metrics,
) -> dict[str, Stored]:
    """What ``index`` holds of the children ``keys``, in one ``_mget`` of their places only."""
    if not keys:
        return {}
    fields = [f"{RESERVED_FIELD}.{name}" for name in (*CHILD_OWN, "deleted")]
    docs = [{"_index": index, "_id": key, "_source": fields} for key in keys]

    def call() -> list[dict[str, Any]]:
        return mget_docs(es.mget(docs=docs))

    hits = call_with_retries(call, "_mget of children's places", retry, metrics)
    return {key: stored_of(hit) for key, hit in zip(keys, hits, strict=True) if hit.get("found")}


def stored_of(hit: Mapping[str, Any]) -> Stored:
    found = hit.get("_source", {}).get(RESERVED_FIELD)
    own: dict[str, Any] = found if isinstance(found, dict) else {}
    kept = own.get("before")
    before: dict[str, Any] = kept if isinstance(kept, dict) else {}
    place = NOWHERE if own.get("deleted") else Place(own.get("parent"), own.get("digest"))
    return Stored(int(hit["_version"]), place, Place(before.get("parent"), before.get("digest")))


def _at(doc: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    found: Any = doc
    for part in path:
        if not isinstance(found, dict):
            return None
        found = found.get(part)
    return found
