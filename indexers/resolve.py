"""The single query's resolve stage: slots filled and small fan-outs, once every task wrote.

In a single query with dimensions (``layout = "single"``), an indexer task
neither looks up the dimension rows its documents name nor searches for the
keys that name the rows it changed: then, a lookup or a search could meet
another task's write of the same batch half done, and a replayed batch would
find otherwise than its first attempt. It hands them on instead (rows of
source :data:`~indexers.handoff.LOOKUP_ROW` and
:data:`~indexers.handoff.FANOUT_ROW`). Those rows, the acks and the counts of
the batch's indexer tasks come here through one exchange, after every indexer
task is done, so Elasticsearch holds every write of the batch and nothing of
the next: a replay finds the same documents. Here, in one task:

1. the acks and counts go on as they came (Arrow columns renamed, no Python
   object per ack);
2. the slots are filled: one ``_mget`` of the distinct rows they name
   (:func:`indexers.dimensions.fill_slots`), their slot acks on to the
   counter in this batch: a key naming a row fires in one micro-batch, not two;
3. the fan-outs of the rows changed in the batch that fit
   (:func:`indexers.fanout_first.small_first`) are searched now, their slot
   acks on to the counter in this batch too; the others go on the fan-out
   topic;
4. the requests the batch read from the fan-out topic get a page each
   (:func:`indexers.fanout.page_each`), their slot acks on to the counter in
   this batch, and a request goes on the topic again where there is more.

What goes on the fan-out topic is published by ``fusion.output.IndexPublisher``
in the task's one transaction, with its marker: exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from acks.fanout import FanoutRequest
from fusion.core.events import now_utc
from fusion.elastic.retry import RetryPolicy
from fusion.observe import names
from fusion.observe.metrics import Metrics
from fusion.spark.tasks import Job
from indexers.dimensions import Named, fill_slots
from indexers.fanout import Where, newest_per_row, page_each, request_records
from indexers.fanout_first import small_first
from indexers.handoff import FANOUT_ROW, HANDOFF_COLUMNS, LOOKUP_ROW, handoff_batch
from indexers.task import FANOUT_COUNTS, Indexed

if TYPE_CHECKING:
    import pyarrow as pa

# The stage's one task (its transactional id: fusion-<pipeline>-single-resolve@resolve).
TASK = "resolve"


def resolve_function(job: Job) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the resolve stage: the counter's input rows in
    (``fusion.contract.CounterRows.INPUT``), the handoff rows out (:mod:`indexers.handoff`)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        fanouts: list[tuple[FanoutRequest, Where]] = []
        lookups: list[Named] = []
        for batch in batches:
            if not batch.num_rows:
                continue
            source = batch.column("source")
            is_fanout = pc.fill_null(pc.equal(source, FANOUT_ROW), False)
            is_lookup = pc.fill_null(pc.equal(source, LOOKUP_ROW), False)
            passed = batch.filter(pc.invert(pc.or_(is_fanout, is_lookup)))
            if passed.num_rows:
                yield passed_on(passed)
            fanouts += _fanouts(batch.filter(is_fanout))
            values = batch.filter(is_lookup).column("raw").to_pylist()
            lookups += [Named.from_bytes(value.encode()) for value in values]
        if fanouts or lookups:
            yield resolved(job, fanouts, lookups)

    return run


def passed_on(rows: pa.RecordBatch) -> pa.RecordBatch:
    """Acks and counts of the counter's input as handoff rows: an ack handed on (its JSON as
    the value), a count to add up."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = rows.num_rows
    is_ack = pc.fill_null(pc.equal(rows.column("kind"), "ack"), False)
    nothing = pa.nulls(n, pa.string())
    columns: dict[str, Any] = {
        "task": pa.array([TASK] * n, pa.string()),
        "topic": nothing,
        "key": nothing,
        "value": pc.cast(rows.column("raw"), pa.binary()),
        "name": rows.column("count_name"),
        "amount": rows.column("count_value"),
        "k": pc.if_else(is_ack, rows.column("k"), nothing),
        "s_topic": rows.column("topic"),
        "s_partition": rows.column("partition"),
        "s_offset": rows.column("offset"),
    }
    for name, _ in HANDOFF_COLUMNS:
        if name not in columns:
            columns[name] = rows.column(name)
    return pa.RecordBatch.from_pydict(columns, schema=_schema())


def _schema() -> pa.Schema:
    import pyarrow as pa

    from fusion.spark.tasks import OUTPUT_COLUMNS

    return pa.schema([(n, getattr(pa, kind)()) for n, kind in (*OUTPUT_COLUMNS, *HANDOFF_COLUMNS)])


def _fanouts(rows: pa.RecordBatch) -> list[tuple[FanoutRequest, Where]]:
    """The fan-outs among the rows: each request (the row's value) and where its row was read."""
    return [
        (FanoutRequest.from_bytes(raw.encode()), (topic, partition, offset))
        for raw, topic, partition, offset in zip(
            *(rows.column(c).to_pylist() for c in ("raw", "topic", "partition", "offset")),
            strict=True,
        )
    ]


def resolved(
    job: Job, fanouts: list[tuple[FanoutRequest, Where]], lookups: list[Named]
) -> pa.RecordBatch:
    """The batch's slots filled and its fan-outs: the slot acks of both handed on (the small
    fan-outs'), the large fan-outs' requests to publish, and what they counted."""
    config = job.config
    metrics = Metrics()
    retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
    acks = fill_slots(job.elasticsearch(), config, lookups, retry, metrics, now_utc())
    # Sorted: the same rows give the same searches, in a replay too.
    fanouts = sorted(fanouts, key=lambda r: (r[0].dimension, r[0].id, r[0].version, r[1]))
    queued = [(r, where) for r, where in fanouts if where[0] == config.fanout_topic]
    changed = newest_per_row(
        [(r, where) for r, where in fanouts if where[0] != config.fanout_topic]
    )
    paged = page_each(job, queued, metrics)
    small, left = small_first(job, changed, metrics)
    records = request_records(config, [*paged.again, *small.again, *left])
    acks += [*paged.acks, *small.acks]
    counts = {name: metrics.get(name) for name in (*FANOUT_COUNTS, names.ES_RETRIES)}
    return handoff_batch(Indexed(TASK, records, counts, handed=acks))
