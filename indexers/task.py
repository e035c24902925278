"""The indexer's executor task: one Kafka partition's records of a micro-batch, in this order:

1. parse each record; malformed ones (not JSON, not an object, no key, a bad
   key, too large) become dead letters;
2. keep the latest record per key (``_id`` = join key, so the last write wins anyway);
3. bulk-write to the source index with ``refresh=wait_for``, ``_id`` = key and
   the Kafka offset + 1 as external version; retry 429/5xx/outages with backoff;
   rejected documents become dead letters;
4. only now hand the dead letters and one ack per confirmed, searchable
   document to the executor's writer, which publishes them in one Kafka
   transaction with the batch marker (:mod:`fusion.spark.tasks`), or
   nothing if this partition's batch was published already.

A crash anywhere fails the task; Spark retries it (or replays the batch),
which rewrites the same ``_id`` with the same version (or finds a newer one
there) and then sends the acks, unless they went out already.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from acks import Ack, AckError, ack_records
from fusion.core import (
    AVRO_FORMATS,
    DeadLetter,
    Reference,
    crash_point,
    dead_letter_records,
    now_utc,
)
from fusion.elastic import Confirmed, Target, write_documents
from fusion.observe import Metrics, names
from fusion.spark import Job, TaskOutput, column
from fusion.topology import Route
from indexers import children
from indexers.avro import Schemas
from indexers.dimensions import (
    Row,
    fan_out,
    first_pages,
    lookup_rows,
    references_in,
    stored_refs,
    worth_a_fanout,
    written_slot_acks,
)
from indexers.records import (
    RawRecord,
    SourceRecord,
    Tombstone,
    latest_per_key,
    parse,
)
from indexers.spec import IndexSpec, Outputs

if TYPE_CHECKING:
    import pyarrow as pa


class IndexPartition:
    """An indexing query's task function (picklable: it travels to the executors).

    A task reads one Kafka partition, so all its records are of one topic: the
    query's ``routes`` (:func:`fusion.topology.routes`) say which task takes it,
    and ``spec`` (:func:`indexers.spec.index_spec`) what each knows of the pipeline.
    """

    def __init__(self, routes: Mapping[str, Route], spec: IndexSpec) -> None:
        self.routes = dict(routes)
        self.spec = spec

    def __call__(self, job: Job, rows: pa.Table) -> TaskOutput:
        raws = [
            RawRecord(*fields)
            for fields in zip(
                column(rows, "value"),
                column(rows, "topic"),
                column(rows, "partition"),
                column(rows, "offset"),
                column(rows, "key"),
                column(rows, "ts"),
                strict=True,
            )
        ]
        task = f"{raws[0].topic}-{raws[0].partition}"
        route = self.routes[raws[0].topic]
        if route.task == "fan_out":
            out, counts = fan_out(self.spec, raws)
            return Indexed(task, out, counts)
        if route.task == "forward_slot_acks":
            return forward_slot_acks(self.spec.outputs, task, raws)
        assert route.source is not None  # an index route names its source
        return index_records(self.spec, route.source, raws, task_start(job, raws))


@dataclass(frozen=True)
class Indexed(TaskOutput):
    """An indexer task's output, and the acks among its records (they come last, in order);
    ``handed``: acks read back from the slots topic, handed on to the counter unpublished."""

    acks: Sequence[Ack] = ()
    handed: Sequence[Ack] = ()


def forward_slot_acks(outputs: Outputs, task: str, raws: list[RawRecord]) -> Indexed:
    """The single query's task of the slots topic: its slot acks, on to the counter as they were
    published (a malformed one is a dead letter)."""
    handed: list[Ack] = []
    dead: list[DeadLetter] = []
    for raw in raws:
        try:
            handed.append(Ack.from_bytes(raw.value or b""))
        except AckError as exc:
            dead.append(DeadLetter.of(str(exc), "counter", None, raw.where, raw.value, None))
    out = dead_letter_records(outputs.dlq, dead, outputs.message_limit)
    counts = {names.SLOT_ACKS: len(handed), names.COUNTER_DLQ: len(dead)}
    return Indexed(task, out, counts, handed=handed)


# The first offset of each task's partition in its batch, by (query, batch, topic, partition):
# a task works its partition a chunk at a time, in offset order, each chunk a call.
_STARTS: dict[tuple[str, int, str, int], int] = {}


def task_start(job: Job, raws: list[RawRecord]) -> int:
    """The first offset of this task's partition in its batch, whichever chunk ``raws`` is.

    Kept per worker for the batch's tasks (a retried task starts again from its
    first chunk, in whichever worker); older batches' are dropped.
    """
    topic, partition = raws[0].topic, raws[0].partition
    first = min(raw.offset for raw in raws)
    batch = job.batch_id if job.batch_id >= 0 else _streaming_batch()
    if batch is None:
        return first  # outside a streaming batch: the chunk is the whole input
    for key in [k for k in _STARTS if k[::2] == (job.query, topic) and k[1] < batch]:
        del _STARTS[key]
    key = (job.query, batch, topic, partition)
    _STARTS[key] = min(_STARTS.get(key, first), first)
    return _STARTS[key]


def _streaming_batch() -> int | None:
    """The micro-batch this task runs in, as Spark tells its tasks (the single query's index
    step runs inside the plan, not in a foreachBatch that knows its batch id)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    found = context.getLocalProperty("streaming.sql.batchId") if context is not None else None
    return int(found) if found is not None else None


def index_records(
    spec: IndexSpec, source: str, raws: list[RawRecord], since: int | None = None
) -> Indexed:
    """Steps 1-4 of the module docstring for one Kafka partition's ``raws``; ``since``: the
    first offset of the partition in this batch (a chunk's own first one if not given)."""
    this = spec.sources[source]
    records: list[SourceRecord] = []
    dead: list[DeadLetter] = []
    tombstones = 0
    retries = Metrics()  # and the time each step took (names.STAGES)
    # Avro's writer schemas, from the registry by id (once per worker: the cache outlives tasks).
    avro = this.format in AVRO_FORMATS
    schemas = Schemas(spec.registry, spec.retry_budget_seconds) if avro else None
    with retries.timed(names.STAGE_INDEX_PARSE):
        for raw in raws:
            parsed = parse(
                raw, source, this.key, spec.max_record_bytes, this.format, this.stores_key,
                schemas, this.declared, this.parent,
            )  # fmt: skip
            if isinstance(parsed, SourceRecord):
                records.append(parsed)
            elif isinstance(parsed, Tombstone):
                tombstones += 1  # the compacted topic's half of a delete: nothing to index
            else:
                dead.append(parsed)
        references = this.references
        if references:
            records = [with_refs(record, references) for record in records]
    crash_point("indexer.before_bulk")
    target = Target(this.index, "indexer", source, spec.bulk_chunk)
    latest = latest_per_key(records)
    # A dimension's rows as they were: a row written again unchanged needs no fan-out.
    before = _rows_before(spec, source, latest, retries) if this.dimension else {}
    if this.order_by is not None:
        # Children: where each row was, read before it moves (indexers/children.py).
        with retries.timed(names.STAGE_INDEX_CHILDREN):
            keys = [record.key for record in latest]
            stored = children.lookup(spec.es(), this.index, keys, spec.retry(), retries)
            first = min(raw.offset for raw in raws) if since is None else since
            latest = children.placed(latest, this.order_by, stored, first)
    with retries.timed(names.STAGE_INDEX_WRITE):
        written = write_documents(spec.es(), target, latest, spec.retry(), retries)
    crash_point("indexer.after_bulk")
    dead.extend(written.dead)
    if this.order_by is not None:
        acks = children.child_acks(source, written.confirmed, now_utc())
    else:
        acks = list(document_acks(source, written.confirmed))
    acked = len(acks)  # a dimension's are fan-outs (below); children ack their parents
    out = dead_letter_records(spec.outputs.dlq, dead, spec.outputs.message_limit)
    if this.slots:
        # Published, not handed on: what counts reads them back from the topic, so a replayed
        # batch counts the slot acks of its first attempt, whatever the lookup finds now.
        with retries.timed(names.STAGE_INDEX_SLOTS):
            slots = written_slot_acks(spec, this.slots, written.confirmed, retries)
        out += ack_records(spec.outputs.slots, slots)
    if this.dimension:
        # A row keyed by its own id is no part of a key: its change goes to the keys
        # that name it, by a fan-out (indexers/dimensions/), not to
        # the counter.
        first = min(raw.offset for raw in raws)
        changed = [
            i for i in written.confirmed if worth_a_fanout(i, before.get(i.record.key), first)
        ]
        with retries.timed(names.STAGE_INDEX_FANOUT):
            out += first_pages(spec, source, changed, retries)
        retries.add(names.FANOUT_UNCHANGED, len(written.confirmed) - len(changed))
        acks = []
    out += ack_records(spec.outputs.acks, acks)
    counts = {
        names.source_count(source, names.SOURCE_RECORDS): len(raws),
        names.source_count(source, names.DLQ): len(dead),
        names.source_count(source, names.SOURCE_INDEXED): len(written.confirmed),
        names.source_count(source, names.SOURCE_STALE): len(written.stale),
        names.source_count(source, names.SOURCE_BULK_REQUESTS): written.requests,
        names.source_count(source, names.SOURCE_ACKS): acked,
        names.source_count(source, names.SOURCE_TOMBSTONES): tombstones,
        names.source_count(source, names.SOURCE_DELETED): sum(
            item.record.deleted for item in written.confirmed
        ),
        names.ES_RETRIES: retries.get(names.ES_RETRIES),
    }
    counts |= {name: retries.get(name) for name in (*FANOUT_COUNTS, *names.STAGES)}
    return Indexed(f"{raws[0].topic}-{raws[0].partition}", out, counts, acks)


# What a dimension's task counts of its rows' fan-outs (asked, and their first pages worked).
FANOUT_COUNTS = (
    names.FANOUT_ASKED, names.FANOUT_UNCHANGED, names.FANOUT_REQUESTS, names.FANOUT_CONTINUED,
    names.FANOUT_KEYS, names.FANOUT_DONE,
)  # fmt: skip


def _rows_before(
    spec: IndexSpec, source: str, records: list[SourceRecord], metrics: Metrics
) -> dict[str, Row]:
    """The dimension rows ``records`` are about to overwrite, by id (those there)."""
    wanted = [(source, record.key) for record in records]
    found = lookup_rows(spec.es(), spec.indexes, wanted, spec.retry(), metrics)
    return {ref: row for (_, ref), row in found.items()}


def with_refs(record: SourceRecord, references: Sequence[Reference]) -> SourceRecord:
    """The record, with the ids of the dimension rows it names (kept in ``fusion.refs``)."""
    return replace(record, refs=stored_refs(references_in(record.doc, references)))


def document_acks(source: str, confirmed: list[Confirmed[SourceRecord]]) -> Iterable[Ack]:
    """An ack per document of ``source`` Elasticsearch confirmed (reconcile gives them too)."""
    acked_at = now_utc()
    for item in confirmed:
        topic, partition, offset = item.record.where
        yield Ack(
            key=item.record.key,
            source=source,
            index=item.index,
            doc_id=item.record.key,
            seq_no=item.seq_no,
            primary_term=item.primary_term,
            version=item.version,
            topic=topic,
            partition=partition,
            offset=offset,
            acked_at=acked_at,
            digest=item.record.digest,
            deleted=item.record.deleted,
        )
