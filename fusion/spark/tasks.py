"""The executor side of every stage: what a task gets, the clients it keeps, what it returns.

Each stage's foreachBatch handler (:mod:`fusion.spark.stage`, on the driver) maps
its micro-batch with ``mapInArrow``: one task per input partition, run by an
executor's Python worker. A task:

1. receives its partition's rows as Arrow batches (no record passes through
   the driver), and takes them in chunks of ``task_chunk_bytes``;
2. does the stage's work (parse, Elasticsearch) on each chunk with a client its
   worker built once and keeps for later tasks (Spark reuses Python workers);
3. returns each chunk's Kafka records and counts as rows of :data:`OUTPUT_SCHEMA`,
   each row naming the task (its input partition).

In the same Spark task, the executor's JVM then publishes those records in
one Kafka transaction with the batch marker (``fusion.output.TransactionalWriter``,
which holds ``task_chunk_bytes`` of them and spills the rest to local disk;
:mod:`fusion.kafka.exactly_once` has the protocol) and hands the driver the
task's counts as ``(name, value, executor)`` rows: a handful per task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from fusion.core import ElasticsearchSettings
from fusion.elastic import client as es_client

if TYPE_CHECKING:
    import pyarrow as pa
    from elasticsearch import Elasticsearch

    from fusion.kafka import OutRecord

# What a task returns: output records (topic set) and counts (name set), each naming the task.
# What a task reads of Spark's Kafka source: a record, where it was read, and its Kafka
# timestamp in epoch milliseconds (``ts``); KAFKA_SELECT makes them of the source's columns.
KAFKA_COLUMNS = ("value", "topic", "partition", "offset", "key", "ts")
KAFKA_SELECT = (*KAFKA_COLUMNS[:-1], "unix_millis(timestamp) AS ts")

OUTPUT_COLUMNS = (
    ("task", "string"),
    ("topic", "string"),
    ("key", "string"),
    ("value", "binary"),
    ("name", "string"),
    ("amount", "int64"),
)
OUTPUT_SCHEMA = "task STRING, topic STRING, key STRING, value BINARY, name STRING, amount BIGINT"
Counts = Mapping[str, int]

_ES: dict[str, Elasticsearch] = {}


@dataclass(frozen=True)
class Job:
    """Which micro-batch of which stage a task belongs to, shipped to the executors with it.

    What a task knows of the pipeline is its own slice, carried by its task
    function (:class:`indexers.spec.IndexSpec`, :class:`fusion.enricher.spec.EnrichSpec`).
    """

    stage: str  # the query's name within the pipeline: indexers, counter, enricher, ...
    crash_prefix: str  # the stage's crash-point prefix: indexer, counter, enricher, naive
    query: str  # the query id from the checkpoint: markers of another checkpoint do not count
    batch_id: int
    chunk_bytes: (
        int  # a task's input, taken this many bytes at a time ([pipeline] task_chunk_bytes)
    )


@dataclass(frozen=True)
class TaskOutput:
    """A task's Kafka records and counts, and the input partition it read (``task``).

    The task key names the transactional id the records go out under: a
    retried task (or a replayed batch) of the same input partition uses the same.
    """

    task: str
    records: Sequence[OutRecord] = ()
    counts: Counts = field(default_factory=dict)


class TaskCount(NamedTuple):
    """One count of one task, as the writer hands it to the driver."""

    name: str
    value: int
    executor: str  # which executor ran the task: host and working directory


def attributed(name: str, executor: str) -> str:
    """A count that only says which executor did the work: the writer keeps it out of markers.

    In a single query the indexer's counts reach the driver through the
    counter's tasks; this keeps the executor that really did the indexing.
    """
    return f"@{name}@{executor}"


def attribution(name: str) -> tuple[str, str] | None:
    """``(count name, executor)`` of an :func:`attributed` count, else None."""
    if not name.startswith("@") or "@" not in name[1:]:
        return None
    count, _, executor = name[1:].partition("@")
    return count, executor


def elasticsearch(settings: ElasticsearchSettings) -> Elasticsearch:
    """This worker's client for ``settings`` (kept across tasks: its connections stay open)."""
    key = repr(sorted(settings.as_client_options().items()))
    client = _ES.get(key)
    if client is None:
        client = _ES[key] = es_client.connect(settings)
    return client


# A task's work on one chunk: its output, or its output in parts (each handed on when made).
Work = Callable[[Job, "pa.Table"], "TaskOutput | Iterable[TaskOutput]"]


def partition_function(
    job: Job, work: Work, to_batch: Callable[[Any], Any] | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function running ``work`` over one task's rows (none: no work).

    ``to_batch`` turns the work's output into the rows returned (default: :func:`output_batch`).
    """
    make_batch = to_batch or output_batch

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        # One chunk at a time: the task holds a chunk's records and what they
        # bring, not its partition's. The writer still publishes every chunk's
        # output in the task's one transaction (it adds the counts up).
        budget = arrow_batch_bytes(job.chunk_bytes)
        for chunk in byte_chunks(batches, job.chunk_bytes):
            done = work(job, pa.Table.from_batches(chunk))
            for output in [done] if isinstance(done, TaskOutput) else done:
                yield from arrow_slices(make_batch(output), budget)
        _freeze_once()

    return run


# Arrow batches, both ways, of a quarter chunk: the JVM keeps each in direct
# memory, in a buffer rounded up to a power of two, per task and direction.
# Whole-chunk batches took 150 MB of direct memory at 500 KB records, quarter
# ones 66 MB (docs/benchmark.md, memory); the task still works in whole chunks.
ARROW_SHARE = 4


def arrow_batch_bytes(chunk_bytes: int) -> int:
    """The size of the Arrow batches between a task's JVM and its Python worker."""
    return max(1, chunk_bytes // ARROW_SHARE)


def arrow_slices(batch: pa.RecordBatch, budget: int) -> Iterator[pa.RecordBatch]:
    """``batch`` in slices of about ``budget`` bytes (whole rows; a larger row alone)."""
    rows = batch.num_rows
    if batch.nbytes <= budget or rows <= 1:
        yield batch
        return
    step = max(1, rows * budget // batch.nbytes)
    for start in range(0, rows, step):
        yield batch.slice(start, step)


def byte_chunks(batches: Iterable[pa.RecordBatch], budget: int) -> Iterator[list[pa.RecordBatch]]:
    """``batches`` grouped in order into chunks of at most ``budget`` bytes, empty ones left out.

    A batch larger than the budget is a chunk of its own (Spark's Arrow batches
    are cut to the budget too: ``spark.sql.execution.arrow.maxBytesPerBatch``).
    """
    chunk: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        if chunk and size + batch.nbytes > budget:
            yield chunk
            chunk, size = [], 0
        chunk.append(batch)
        size += batch.nbytes
    if chunk:
        yield chunk


_FROZEN: list[bool] = []


def _freeze_once() -> None:
    """Move this worker's long-lived objects out of the garbage collector's sight, once.

    PySpark's worker runs ``gc.collect()`` after every task; with the modules
    and clients a task loads that full collection cost about 65 ms of CPU
    per task. Frozen objects are skipped by it (and stay alive, as they would).
    """
    if not _FROZEN:
        import gc

        gc.freeze()
        _FROZEN.append(True)


def output_batch(output: TaskOutput) -> Any:
    """The rows of :data:`OUTPUT_SCHEMA` for ``output``: its records, then its counts."""
    import pyarrow as pa

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in OUTPUT_COLUMNS])
    return pa.RecordBatch.from_pydict(output_columns(output), schema=schema)


def output_columns(output: TaskOutput) -> dict[str, list[Any]]:
    """:data:`OUTPUT_SCHEMA`'s columns of ``output``: its records, then its counts."""
    counts = [(name, int(value)) for name, value in output.counts.items() if value]
    records = output.records
    size = len(records) + len(counts)
    return {
        "task": [output.task] * size,
        "topic": [topic for topic, _, _ in records] + [None] * len(counts),
        "key": [key for _, key, _ in records] + [None] * len(counts),
        "value": [value for _, _, value in records] + [None] * len(counts),
        "name": [None] * len(records) + [name for name, _ in counts],
        "amount": [None] * len(records) + [value for _, value in counts],
    }


def column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist()  # type: ignore[no-any-return]
