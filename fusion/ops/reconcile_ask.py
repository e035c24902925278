"""One slice of `fusion reconcile` for keys that hold rows by reference: the counter is asked.

A key with dimension slots has an enriched version only the counter can go on
counting (its slots' changes, docs/dimensions.md), and a document written
here could race the counter's next change of the key. So for such a pipeline
the slice writes no enriched document: it finds the keys whose document is
missing or was built from other versions than Elasticsearch holds now (its
own parts by key, the rows its slots reach, chains followed), and publishes
for each, on the slots topic (which the counter reads in every layout):

1. the acks of the key's own parts and of its slots, as the indexer would
   give them now: a counter that lacked them (acks lost, a key forgotten)
   takes them, and one that had them drops them as duplicates;
2. an ask (an ack of source :data:`fusion.counter.REENRICH`): a
   fired key is enriched once more, from the counter's state, the enricher
   counting on from the enriched document's version.

A resumed run publishes a slice again only if its transaction did not
commit; an ask published twice enriches a key twice, with the same content.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from acks import Ack, ack_records
from fusion.core import RESERVED_FIELD, PipelineConfig, Slot, crash_point, now_utc
from fusion.counter import REENRICH
from fusion.elastic import Confirmed, RetryPolicy, call_with_retries
from fusion.enricher import EnrichSpec, enrich_spec, mget
from fusion.observe import Metrics, names
from fusion.ops.reconcile_slice import (
    COMPLETE,
    PLANNED,
    SCANNED,
    STAGE,
    UP_TO_DATE,
    pages,
    slice_task,
    stale_arrays,
)
from fusion.spark import Job, TaskOutput, column
from indexers import SourceRecord, document_acks, row_of
from indexers.dimensions import Row, RowId, follow, lookup_rows, slot_acks, walk, wanted_rows

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class AskSpec:
    """What a slice needs: the enrichment's slice of the pipeline, the key's slots, where
    every source's documents are, and the topic the counter reads slot acks from."""

    enrich: EnrichSpec
    slots: tuple[Slot, ...]
    indexes: Mapping[str, str]
    slots_topic: str
    message_limit: int

    @classmethod
    def of(cls, config: PipelineConfig) -> AskSpec:
        indexes = {s.name: config.index_of(s) for s in config.sources}
        spec = enrich_spec(config)
        return cls(spec, config.key_slots, indexes, config.slots_topic, config.message_limit)


@dataclass(frozen=True)
class ScanAndAsk:
    """Task function: scan one slice, ask the counter for the keys that need it."""

    spec: AskSpec

    def __call__(self, job: Job, rows: pa.Table) -> Iterator[TaskOutput]:
        enrich = self.spec.enrich
        es, retry = enrich.es(), enrich.retry()
        for n, slices in zip(column(rows, "slice"), column(rows, "slices"), strict=True):
            task, retries = slice_task(n), Metrics()
            for ids in pages(es, enrich, (n, slices), retry):
                records, counts = _page(self.spec, ids, (retry, retries))
                yield TaskOutput(task, records, counts)
            yield TaskOutput(task, (), {names.ES_RETRIES: retries.get(names.ES_RETRIES)})


def _page(
    spec: AskSpec, ids: list[str], retrying: tuple[RetryPolicy, Metrics]
) -> tuple[list[Any], dict[str, int]]:
    """The records that ask for a page's stale keys, and what the page counted."""
    enrich = spec.enrich
    own = enrich.parts
    docs: list[dict[str, Any]] = [{"_index": s.index, "_id": key} for key in ids for s in own]
    held = [f"{RESERVED_FIELD}.{name}" for name in ("versions", "children")]
    docs += [{"_index": enrich.enriched_index, "_id": key, "_source": held} for key in ids]
    crash_point("reconcile.scan")
    hits = call_with_retries(partial(mget, enrich.es(), docs), "reconcile _mget", *retrying)
    parts: dict[str, dict[str, Confirmed[SourceRecord]]] = {key: {} for key in ids}
    for (key, source), hit in zip([(k, s) for k in ids for s in own], hits, strict=False):
        if hit.get("found"):
            parts[key][source.name] = _part(key, source.index, hit)
    written: dict[str, dict[str, Any] | None] = {
        key: hit.get("_source", {}).get(RESERVED_FIELD, {}) if hit.get("found") else None
        for key, hit in zip(ids, hits[len(ids) * len(own) :], strict=True)
    }
    rows = _rows(spec, [item for key in ids for item in parts[key].values()], retrying)
    counts = dict.fromkeys((SCANNED, COMPLETE, UP_TO_DATE, PLANNED), 0)
    stale: list[str] = []
    current: dict[str, Any] = {}
    required = [name for name in enrich.required if name in {s.name for s in own}]
    for key in ids:
        counts[SCANNED] += 1
        have = parts[key]
        if any(name not in have or have[name].record.deleted for name in required):
            continue
        counts[COMPLETE] += 1
        doc = written[key]
        if doc is None or doc.get("versions") != _versions(spec, have, rows):
            stale.append(key)
        else:
            current[key] = {RESERVED_FIELD: doc}
    if enrich.children and current:
        stale += sorted(stale_arrays(enrich.es(), enrich, current, retrying))
    counts[PLANNED] += len(stale)
    counts[UP_TO_DATE] += counts[COMPLETE] - len(stale)
    asked = [ack for key in stale for ack in _acks(spec, key, parts[key], rows)]
    return ack_records(spec.slots_topic, asked), counts


def _part(key: str, index: str, hit: Mapping[str, Any]) -> Confirmed[SourceRecord]:
    """A key's own part as Elasticsearch holds it, as its indexer confirmed it."""
    row = row_of(hit)  # its version, digest and the rows it names, as a row's
    named = dict(row.refs)
    record = SourceRecord(key, {}, STAGE, 0, 0, b"", row.digest, deleted=not row.there, refs=named)
    return Confirmed(record, index, row.seq_no, row.primary_term, row.version)


def _rows(
    spec: AskSpec,
    items: Sequence[Confirmed[SourceRecord]],
    retrying: tuple[RetryPolicy, Metrics],
) -> dict[RowId, Row]:
    """The rows the parts name, and the rows those name along the chains (a lookup a level)."""
    retry, metrics = retrying

    def lookup(wanted: list[RowId]) -> dict[RowId, Row]:
        return lookup_rows(spec.enrich.es(), spec.indexes, wanted, retry, metrics)

    first = {slot.hops[0] for slot in spec.slots}
    named = (item.record for item in items if not item.record.deleted)
    return follow(lookup, spec.slots, lookup(wanted_rows(named, first)))


def _versions(
    spec: AskSpec, parts: Mapping[str, Confirmed[SourceRecord]], rows: Mapping[RowId, Row]
) -> dict[str, int]:
    """The versions the key's enriched document holds when built from what is there now: its
    parts' (tombstones too), and the rows its slots reach."""
    now = {name: item.version for name, item in parts.items()}
    for slot in spec.slots:
        item = parts.get(slot.referrer)
        if item is None or item.record.deleted:
            continue
        _, _, row = walk(slot.hops, item.record.refs.get(slot.hops[0].name), rows)
        if row is not None:
            now[slot.name] = row.version
    return now


def _acks(
    spec: AskSpec, key: str, parts: Mapping[str, Confirmed[SourceRecord]], rows: Mapping[RowId, Row]
) -> list[Ack]:
    """A stale key's acks: its parts' and slots' as the indexer gives them, then the ask."""
    at = now_utc()
    out = [ack for name, item in sorted(parts.items()) for ack in document_acks(name, [item])]
    for name, item in sorted(parts.items()):
        starting = [slot for slot in spec.slots if slot.referrer == name]
        out += slot_acks(spec.indexes, starting, [item], rows, at)
    ask = Ack(
        key=key, source=REENRICH, index=spec.enrich.enriched_index, doc_id=key, seq_no=0,
        primary_term=1, version=1, topic=STAGE, partition=0, offset=0, acked_at=at,
    )  # fmt: skip
    return [*out, ask]
