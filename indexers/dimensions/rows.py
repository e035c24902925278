"""The slot acks of records that name dimension rows (docs/dimensions.md).

After the indexer's bulk write of a source's documents (``refresh=wait_for``:
they are searchable), the rows they name are looked up, in one ``_mget`` over
the dimensions' indexes for the distinct ids of the task, and each document
gets one slot ack per dimension it references: "key K's item, at version vi,
names brand 17, whose row is at version vb" (or is not there). Writing before
reading is what makes a row written at the same time safe: if this lookup
misses brand 17, brand 17 became searchable after the item did, and its
fan-out's search finds the item.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from elasticsearch import Elasticsearch

from acks import Ack
from fusion.core import RESERVED_FIELD, STORED_OWN, Reference
from fusion.elastic import RetryPolicy, call_with_retries, mget_docs
from fusion.observe import Metrics
from indexers import SourceRecord, content_digest, is_tombstone

RowId = tuple[str, str]  # dimension, id


@dataclass(frozen=True)
class Row:
    """A dimension row as Elasticsearch holds it: ``digest`` None for a deleted row's
    tombstone (its version still orders it)."""

    version: int
    digest: str | None
    seq_no: int = 0
    primary_term: int = 1
    # The rows it names in turn (its fusion.refs), by reference: where a chain goes on.
    refs: Mapping[str, str] = field(default_factory=dict)

    @property
    def there(self) -> bool:
        return self.digest is not None


def wanted_rows(records: Iterable[SourceRecord], references: Iterable[Reference]) -> list[RowId]:
    """The distinct rows the records name, in a stable order (a row two references name is
    one row)."""
    return sorted(
        {
            (r.dimension, ref)
            for record in records
            for r in references
            if (ref := record.refs.get(r.name)) is not None
        }
    )


def lookup_rows(
    es: Elasticsearch,
    indexes: Mapping[str, str],
    wanted: Sequence[RowId],
    retry: RetryPolicy,
    metrics: Metrics,
) -> dict[RowId, Row]:
    """The rows of ``wanted`` that Elasticsearch has (a tombstone too), in one ``_mget``;
    ``indexes``: each source's index, by name."""
    if not wanted:
        return {}
    docs = [{"_index": indexes[d], "_id": ref} for d, ref in wanted]

    def call() -> list[dict[str, Any]]:
        return mget_docs(es.mget(docs=docs))

    hits = call_with_retries(call, "_mget of dimension rows", retry, metrics)
    return {
        row_id: row_of(hit) for row_id, hit in zip(wanted, hits, strict=True) if hit.get("found")
    }


def row_of(hit: Mapping[str, Any]) -> Row:
    source = hit["_source"]
    gone = is_tombstone(source)
    digest = None if gone else content_digest(record_content(source))
    own = source.get(RESERVED_FIELD)
    refs = own.get("refs") if isinstance(own, dict) and not gone else None
    kept = {k: v for k, v in refs.items() if isinstance(v, str)} if isinstance(refs, dict) else {}
    seq_no, term = hit.get("_seq_no", 0), hit.get("_primary_term", 1)
    return Row(hit["_version"], digest, seq_no, term, kept)


def record_content(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored document as its record was (the digest the indexer gave it): without the key,
    references and Kafka timestamp Fusion kept in it."""
    own = stored.get(RESERVED_FIELD)
    if not isinstance(own, dict) or not set(STORED_OWN) & set(own):
        return dict(stored)
    kept = {k: v for k, v in own.items() if k not in STORED_OWN}
    rest = {k: v for k, v in stored.items() if k != RESERVED_FIELD}
    return rest | ({RESERVED_FIELD: kept} if kept else {})


def slot(
    index: str,
    named: tuple[str, int, str, str | None],
    row: Row | None,
    where: tuple[str, int, int],
    acked_at: datetime,
    via: tuple[int, ...] = (),
) -> Ack:
    """The slot ack of ``named`` (key, its referrer's version, the slot's name, the id it
    names), a row of ``index``: the row, or an empty slot when the row is not there (or is
    a tombstone); ``via``: a chain's rows' versions between."""
    key, version, name, ref = named
    digest = slot_digest(ref, row.digest) if ref and row and row.digest else None
    topic, partition, offset = where
    return Ack(
        key=key,
        source=name,
        index=index,
        doc_id=ref or key,
        seq_no=row.seq_no if row else 0,
        primary_term=row.primary_term if row else 1,
        version=version,
        topic=topic,
        partition=partition,
        offset=offset,
        acked_at=acked_at,
        digest=digest,
        deleted=digest is None,
        ref=ref,
        ref_version=row.version if row else 0,
        via=via,
    )


def slot_digest(ref: str, row_digest: str) -> str:
    """A slot's content: the row's, and which row it is (a move to a row of the same content
    is still a change of the enriched document's ``fusion`` block)."""
    return hashlib.sha256(f"{ref}\x00{row_digest}".encode()).hexdigest()[:16]
