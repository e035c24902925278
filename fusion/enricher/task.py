"""The enricher's executor task: one partition of ready (or updated, or incomplete) events.

In this order:

1. parse the events (malformed ones become dead letters) and keep one per key;
2. fetch the keys' source documents from Elasticsearch (:mod:`fusion.enricher.lookups`:
   one ``_mget`` per chunk in ``batched`` mode, N GETs per key in ``per-source``);
3. build each enriched document (:func:`fusion.enricher.document.build_enriched`); a key
   whose documents are no longer all in Elasticsearch becomes a dead letter;
4. bulk-write the enriched documents: ``_id`` = key, external version = the sum
   of the source versions, so a replay rewrites the same document and an
   enrichment from older source documents never overwrites a newer one (with
   dimensions or children, :func:`~fusion.enricher.document.next_version`, and a
   document not there yet is created at Elasticsearch's own version);
5. hand the enriched records and the dead letters to the executor's writer,
   which publishes them in one Kafka transaction with the batch marker
   (:mod:`fusion.spark.tasks`): exactly once per batch.

Steps 1-4 are :func:`enrich_events`, which ``fusion reconcile`` runs too;
steps 2-4 are :func:`enrich`, which the counter's task runs on the keys it
fires (``enrich_in = "counter"``). Both go a group of keys at a time and hand
each group's output on before the next (:class:`GroupSizer`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elasticsearch import Elasticsearch

from fusion.core import DeadLetter, crash_point, dead_letter_records, now_iso
from fusion.elastic import Confirmed, RetryPolicy, Target, write_documents
from fusion.enricher import lookups
from fusion.enricher.children import ArraysByKey, fetch_arrays
from fusion.enricher.document import enriched_json, last_record_ms, missing_sources, next_version
from fusion.enricher.groups import GroupSizer
from fusion.enricher.latency import observe_latencies, sketch_apart
from fusion.enricher.request import EnrichRequest, EventPosition, parse_event
from fusion.enricher.spec import EnrichSpec
from fusion.kafka import OutRecord
from fusion.observe import Metrics, names
from fusion.spark import Job, TaskOutput, column

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class EnrichedDoc:
    """An enriched document to write (its JSON, for the index and the topic alike), and the
    event it answers."""

    key: str
    body: bytes
    fired_at: str
    where: EventPosition
    original: bytes
    version: int | None = None
    delete: bool = False  # its sources deleted: the enriched document goes (a tombstone)
    last_record_ms: int | None = None  # the latest part's Kafka timestamp: its latency's start
    # Written only where no document is, at Elasticsearch's own version (``version`` unused).
    create: bool = False

    @property
    def source(self) -> bytes:
        return self.body


@dataclass(frozen=True)
class Enrichment:
    """One part of an enrichment (a group of keys, or its dead letters): records and counts."""

    records: list[OutRecord]
    counts: dict[str, int]


@dataclass(frozen=True)
class EnrichPartition:
    """The enricher query's task function (steps 1-5 of the module docstring), a group at a
    time; ``spec`` (:func:`fusion.enricher.spec.enrich_spec`) is what it knows of the pipeline."""

    spec: EnrichSpec

    def __call__(self, job: Job, rows: pa.Table) -> Iterator[TaskOutput]:
        events = list(
            zip(
                column(rows, "value"),
                zip(
                    column(rows, "topic"),
                    column(rows, "partition"),
                    column(rows, "offset"),
                    strict=True,
                ),
                strict=True,
            )
        )
        topic, partition, _ = events[0][1]
        for part in enrich_events(self.spec, self.spec.es(), events, self.spec.retry()):
            yield TaskOutput(f"{topic}-{partition}", part.records, part.counts)


def enrich_events(
    spec: EnrichSpec,
    es: Elasticsearch,
    events: Sequence[tuple[bytes | None, EventPosition]],
    retry: RetryPolicy,
) -> Iterator[Enrichment]:
    """Steps 1-4 for events read from Kafka: parse, look up, build and write."""
    wanted: list[EnrichRequest] = []
    dead: list[DeadLetter] = []
    for value, where in events:
        parsed = parse_event(spec.incomplete_topic, value, where)
        if isinstance(parsed, DeadLetter):
            dead.append(parsed)
        else:
            wanted.append(parsed)
    return enrich(spec, es, wanted, retry, dead)


def enrich(
    spec: EnrichSpec,
    es: Elasticsearch,
    events: Sequence[EnrichRequest],
    retry: RetryPolicy,
    dead: Sequence[DeadLetter] = (),
) -> Iterator[Enrichment]:
    """Steps 2-4: look up, build and write the enriched documents of ``events``.

    The enricher's task runs it on the events it read; the counter's task on
    the events it just decided (``enrich_in = "counter"``).

    The keys go in groups whose documents come to about ``task_chunk_bytes``
    (:class:`GroupSizer`). Each group's enriched records and counts are
    yielded as soon as it is done, so a task holds one group's documents at a
    time, never all of its keys'; the dead letters come last.
    """
    dead = list(dead)
    wanted: dict[str, EnrichRequest] = {}
    for event in events:
        if event.key not in wanted or wanted[event.key].partial:
            # A complete enrichment supersedes a partial one of the same key.
            wanted[event.key] = event
    keys = list(wanted)
    sizer = GroupSizer.of(spec)
    # The task's latencies in one sketch, handed on once: its bins stay within the sketch's
    # bound however many groups it had (a batch marker's size counts on it).
    latencies = Metrics()
    start = 0
    while start < len(keys):
        group = keys[start : start + sizer.keys()]
        start += len(group)
        metrics = Metrics()
        done = _enrich_group(spec, es, {key: wanted[key] for key in group}, retry, metrics)
        sizer.observe(len(group), done.bytes)
        dead += done.dead
        bins, counts = sketch_apart(metrics.counts())
        latencies.add_all(bins)
        yield Enrichment(done.records, counts)
    counts = {
        names.ENRICHER_READY: len(wanted),
        names.ENRICHER_BATCHES: 1 if wanted else 0,
        names.ENRICHER_DLQ: len(dead),
    } | latencies.counts()
    yield Enrichment(dead_letter_records(spec.dlq_topic, dead, spec.message_limit), counts)


@dataclass(frozen=True)
class _Group:
    """One group's enriched records, dead letters, and the bytes its documents came to."""

    records: list[OutRecord]
    dead: list[DeadLetter]
    bytes: int


def _enrich_group(
    spec: EnrichSpec,
    es: Elasticsearch,
    wanted: dict[str, EnrichRequest],
    retry: RetryPolicy,
    metrics: Metrics,
) -> _Group:
    dead: list[DeadLetter] = []
    rows = {key: want.row_ids() for key, want in wanted.items() if want.refs}
    # With slots, the version each key's enriched document has now: the next is above it.
    with metrics.timed(names.STAGE_ENRICH_LOOKUP):
        found = lookups.fetch(es, spec, list(wanted), metrics, retry, rows, spec.versioned)
        kept = [key for key, want in wanted.items() if want.kind != "deleted"]
        arrays = fetch_arrays(es, spec, kept, metrics, retry) if spec.children else {}
    crash_point("enricher.after_lookup")
    with metrics.timed(names.STAGE_ENRICH_BUILD):
        enriched = _documents(spec, wanted, found, arrays, dead, metrics)
    target = Target(spec.enriched_index, "enricher", None, spec.bulk_chunk, False)
    with metrics.timed(names.STAGE_ENRICH_WRITE):
        written = write_documents(es, target, enriched, retry, metrics)
    crash_point("enricher.after_write")
    observe_latencies(metrics, [c.record for c in written.confirmed], spec.latency_objective)
    dead.extend(written.dead)
    records, too_large = enriched_records(spec, written.confirmed)
    dead.extend(too_large)
    kinds = Counter(wanted[item.record.key].kind for item in written.confirmed)
    metrics.add_all(
        {
            names.ENRICHER_ENRICHED: len(written.confirmed) - kinds["deleted"],
            names.ENRICHER_DELETED: kinds["deleted"],
            names.ENRICHER_UPDATED: kinds["updated"],
            names.ENRICHER_PARTIAL: kinds["incomplete"],
            names.ENRICHER_STALE: len(written.stale),
            names.ENRICHER_BULK_REQUESTS: written.requests,
        }
    )
    # What the group's documents weighed, as the enriched documents that joined them.
    size = sum(len(value or b"") for _, _, value in records)
    size += sum(letter.original_size or 0 for letter in too_large)
    return _Group(records, dead, size)


def _documents(
    spec: EnrichSpec,
    wanted: dict[str, EnrichRequest],
    found: lookups.DocsByKey,
    arrays: ArraysByKey,
    dead: list[DeadLetter],
    metrics: Metrics,
) -> list[EnrichedDoc]:
    """Each wanted key's enriched document (to write, or to delete); ``dead`` gets the keys
    whose required parts Elasticsearch no longer has."""
    enriched: list[EnrichedDoc] = []
    enriched_at = now_iso()
    for key, want in wanted.items():
        docs = found.pop(key)
        current = docs.pop(lookups.WRITTEN, None)
        metrics.add(names.ENRICHER_DOCS_FETCHED, len(docs))
        before = current.version if current else None
        version = next_version(docs, spec.dimensions, want.changes, before)
        last = last_record_ms(docs)
        if want.kind == "deleted":
            doc = EnrichedDoc(
                key, b"", want.fired_at, want.where, want.original, version, True, last
            )
            enriched.append(doc)
            continue
        # A deleted row (the event says so, and its document is still gone) is missing too,
        # required or not; a required one missing otherwise means the store lost it.
        gone = missing_sources(docs, want.deleted)
        missing = sorted({*missing_sources(docs, spec.required), *gone})
        unexpected = [name for name in missing if name not in want.deleted]
        if (unexpected and not want.partial) or len(missing) == len(spec.sources) - len(
            spec.children
        ):
            gone = unexpected or list(spec.source_names)
            reason = f"{want.kind}, but Elasticsearch no longer has source(s) {gone} for key"
            dead.append(DeadLetter.of(reason, "enricher", None, want.where, want.original, key))
            continue
        children = arrays.get(key, {})
        last = last_record_ms(docs, children)
        body = enriched_json(
            spec.key_field, key, docs, want.fired_at, enriched_at, missing, children
        )
        # With slots, a deleted document's version (Elasticsearch remembers it a while) may be
        # above what this request counts: created where none is, it takes the next one.
        create = spec.versioned and current is None
        at = (want.fired_at, want.where, want.original)
        enriched.append(EnrichedDoc(key, body, *at, version, False, last, create))
    return enriched


def enriched_records(
    spec: EnrichSpec, confirmed: list[Confirmed[EnrichedDoc]]
) -> tuple[list[OutRecord], list[DeadLetter]]:
    """The enriched topic's records for documents Elasticsearch confirmed.

    A document too large for a Kafka message (:attr:`PipelineConfig.message_limit`)
    is written to Elasticsearch all the same; on the topic it becomes a dead
    letter carrying the start of it (the pipeline goes on).
    """
    topic = spec.enriched_topic
    limit = spec.message_limit
    records: list[OutRecord] = []
    dead: list[DeadLetter] = []
    for item in confirmed:
        key = item.record.key
        if item.record.delete:
            records.append((topic, key, None))  # a tombstone: a compacted topic forgets the key
            continue
        value = item.record.body
        size = len(value) + len(key.encode())
        if size <= limit:
            records.append((topic, key, value))
            continue
        reason = (
            f"enriched document of {size} bytes exceeds the {limit}-byte message limit of "
            f"{topic}; it is in {spec.enriched_index}, not on the topic"
        )
        # where: the event that asked for it; original: the document itself (cut).
        dead.append(DeadLetter.of(reason, "enricher", None, item.record.where, value, key))
    return records, dead
