"""The Spark wiring every stage shares: reading Kafka, starting a query, and its driver side.

A stage is a foreachBatch query whose per-record work runs in executor tasks
(:mod:`fusion.runtime.tasks`). Its driver side, :class:`BatchStage`, does per micro-batch:

1. map the batch with the stage's task function (``mapInArrow``), one task
   per input partition; the tasks write Elasticsearch and publish their own
   Kafka records exactly once;
2. add up what the tasks counted: a few ``(name, value, executor)`` rows per
   task, the only data of a batch the driver ever holds;
3. commit the batch on the driver's own transactional id: a marker with the
   stage's cumulative counts, plus the batch's end offsets as the stage's
   consumer-group offsets. Another process that runs the same query fences
   this one (:class:`~fusion.runtime.exactly_once.FencedError`), and ``fusion status``
   reads every component's counts and lag from Kafka, whichever process runs it.

Spark commits the batch after the handler returns; a replay after a crash
finds the tasks' and the driver's markers and neither writes nor counts twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from confluent_kafka import TopicPartition
from py4j.protocol import Py4JJavaError

from fusion.core.config import PipelineConfig
from fusion.core.errors import FusionError
from fusion.core.events import dead_letter_records
from fusion.runtime import clients, data_loss, faults, tasks
from fusion.runtime.checkpoint import (
    CheckpointFiles,
    batch_offsets,
    committed_batches,
    planned_batches,
    query_id,
)
from fusion.runtime.errors import MarkersGoneError, StageError
from fusion.runtime.exactly_once import OutRecord, TransactionalOutput
from fusion.runtime.kafka_calls import retry_kafka
from fusion.runtime.markers import REPLAY_ALERT, REPLAY_UNMARKED, Marker, replay_unmarked
from fusion.runtime.metrics import Metrics

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

KAFKA_ALERT = "kafka"
KAFKA_COLUMNS = ("value", "topic", "partition", "offset")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exceeded))(: .*)?$")
# "java.lang.IllegalStateException: KafkaAccessError: ..." from fusion.output.Writer.
_JVM_NAMED = re.compile(r"Exception: ((?:Kafka\w*|MessageTooLarge|Transaction|Fenced)Error: .*)$")
_JVM_PACKAGES = ("org.", "java.", "javax.", "scala.", "py4j.", "pyspark.errors.")


def root_cause(text: str) -> str:
    """The most telling line of a Spark error's text (a Java stack trace with Python inside).

    The innermost Python exception raised by Fusion or a library it calls,
    else the first line of the text.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [
        line for line in lines if _EXCEPTION_LINE.match(line) and not line.startswith(_JVM_PACKAGES)
    ]
    if not found:
        # The executor's JVM writer names Fusion's error inside a Java exception's message.
        found = [match.group(1) for line in lines if (match := _JVM_NAMED.search(line))]
    return (found[-1] if found else lines[0] if lines else "no message")[:500]


def error_class(cause: str) -> tuple[type[FusionError], str] | None:
    """The first Fusion error class a :func:`root_cause` line names, and the text after it.

    ``micro-batch of single failed: MessageTooLargeError: ...``: the stage's
    wrapping first, the task's error inside it.
    """
    classes: dict[str, type[FusionError]] = {}
    pending: list[type[FusionError]] = [FusionError]
    while pending:
        cls = pending.pop()
        classes[cls.__name__] = cls
        pending += cls.__subclasses__()
    for match in re.finditer(r"(\w+Error): ", cause):
        found = classes.get(match.group(1))
        if found is not None and found.__name__ != "StageError":
            return found, cause[match.end() :]
    return None


def read_kafka(
    spark: SparkSession, config: PipelineConfig, *topics: str, starting: str | None = None
) -> DataFrame:
    """A streaming read of ``topics``: committed records only (``read_committed``).

    A new query starts at ``starting`` (Spark's ``startingOffsets`` JSON), or
    at the earliest offsets; a query with a checkpoint resumes from it.

    ``failOnDataLoss`` is off so that a topic whose old records retention already
    deleted does not stop the pipeline; ``fusion reconcile`` covers such gaps.
    One Spark partition per Kafka partition (no ``minPartitions``): the tasks'
    transactional ids are derived from the Kafka partition they read.
    """
    options = config.kafka.as_spark_options() | {
        "subscribe": ",".join(topics),
        "startingOffsets": starting or "earliest",
        "kafka.isolation.level": "read_committed",
        "kafka.fetch.max.wait.ms": "5",
        "maxOffsetsPerTrigger": str(config.pipeline.max_offsets_per_trigger),
        "failOnDataLoss": "false",
        # A broker restart must not fail the query: keep asking for offsets, once a
        # second, for as long as the stages retry Elasticsearch.
        "fetchOffset.numRetries": str(int(config.pipeline.retry_budget_seconds)),
        "fetchOffset.retryIntervalMs": "1000",
    }
    return spark.readStream.format("kafka").options(**options).load()


def start_foreach_batch(
    stream: DataFrame, stage: BatchStage, conf: Mapping[str, str] | None = None
) -> StreamingQuery:
    """Start ``stream`` into ``stage``, checkpointed under ``<checkpoint_dir>/<stage.name>``.

    The stage's transactional id is claimed first: if another process runs
    the same query, that one is fenced off now and fails at its next batch.
    ``conf``: Spark SQL settings for this query alone (a query reads the
    session's settings once, when it starts).
    """
    config = stage.config
    marker = stage.lease.last_marker()
    checkpoint = config.checkpoint(stage.name)
    _refuse_an_unmarked_replay(CheckpointFiles(stream.sparkSession, checkpoint), stage, marker)
    settings = dict(conf or {})
    # The Arrow batches a task's Python worker gets: a share of the chunks it works in.
    settings.setdefault(
        ARROW_BATCH_BYTES, str(tasks.arrow_batch_bytes(config.pipeline.task_chunk_bytes))
    )
    if is_local(checkpoint):
        # Hadoop's FileContext API renames through symlink checks that, on a local
        # disk without Hadoop's native library, start a `readlink` process per
        # file: dozens a second with six queries. A local rename is atomic anyway.
        settings.setdefault(CHECKPOINT_MANAGER, LOCAL_CHECKPOINT_MANAGER)
    writer = (
        stream.writeStream.queryName(f"{config.name}-{stage.name}")
        .foreachBatch(stage)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=config.pipeline.trigger_interval)
    )
    # Each query's jobs in a scheduler pool of its own: with Spark's FAIR mode, one
    # query's batch never waits behind another query's queued tasks.
    with (
        session_conf(stream.sparkSession, settings),
        scheduler_pool(stream.sparkSession, stage.name),
    ):
        return writer.start()


def _refuse_an_unmarked_replay(
    files: CheckpointFiles, stage: BatchStage, marker: Marker | None
) -> None:
    """Stop before Spark replays a batch whose exactly-once markers Kafka expired."""
    query = query_id(files)
    if query is None:
        return  # a fresh checkpoint
    pending = replay_unmarked(planned_batches(files), committed_batches(files), marker, query)
    if pending is None:
        return
    name = f"{stage.config.name}-{stage.name}"
    if os.environ.get(REPLAY_UNMARKED) != "1":
        raise MarkersGoneError(name, pending)
    message = f"{name}: replaying batch {pending} without its markers (its output may repeat)"
    stage.metrics.alert(REPLAY_ALERT, message)


ARROW_BATCH_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
LOCAL_CHECKPOINT_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


def is_local(uri: str) -> bool:
    """A path, or a ``file:`` URI."""
    return "://" not in uri or uri.startswith("file:")


@contextlib.contextmanager
def session_conf(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """Set ``conf`` on the session while the block runs, then restore what was there."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


@contextlib.contextmanager
def scheduler_pool(spark: SparkSession, pool: str) -> Iterator[None]:
    """Jobs of queries started in the block run in the scheduler pool ``pool``.

    A query's thread inherits the local properties of the thread that starts it.
    """
    context = spark.sparkContext
    before = context.getLocalProperty(POOL)
    context.setLocalProperty(POOL, pool)
    try:
        yield
    finally:
        context.setLocalProperty(POOL, before)  # type: ignore[arg-type]


POOL = "spark.scheduler.pool"


class BatchStage:
    """The driver side of a stage's foreachBatch (see the module docstring).

    Subclasses name the query (``name``), their crash points (``points``) and
    give the task function (:meth:`work`) and the columns it reads (:meth:`columns`).
    """

    def __init__(self, config: PipelineConfig, metrics: Metrics, name: str, points: str) -> None:
        self.config = config
        self.metrics = metrics
        self.name = name
        self.points = points
        self.lease = TransactionalOutput(
            config.kafka,
            f"fusion-{config.name}-{name}",
            config.markers_topic,
            config.pipeline.retry_budget_seconds,
            f"{points}.driver",
            on_retry=lambda message: metrics.alert(KAFKA_ALERT, message),
        )
        self._query: str | None = None
        self._totals: dict[str, int] | None = None
        self._positions: dict[tuple[str, int], int] | None = None
        # The source topics this stage reads (topic -> source): their records can be lost.
        self.source_of: dict[str, str] = {}

    def work(self) -> tasks.Work:
        raise NotImplementedError

    def columns(self, batch: DataFrame) -> DataFrame:
        return batch.select(*KAFKA_COLUMNS)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        files = CheckpointFiles(batch.sparkSession, self.config.checkpoint(self.name))
        query = self._query_id(files)
        job = tasks.Job(self.config, self.name, self.points, query, batch_id)
        lost = self._lost(files, batch_id)  # before the tasks read: what they cannot
        try:
            rows = self.run(batch, job)
        except Py4JJavaError as exc:
            raise _short(self.name, exc) from None
        counts: dict[str, int] = data_loss.counts(lost, self.source_of)
        for row in rows:
            if tasks.attribution(row.name) is None:
                counts[row.name] = counts.get(row.name, 0) + row.value
        letters = data_loss.dead_letters(lost, self.source_of)
        records = dead_letter_records(self.config.dlq_topic, letters)
        self._commit(files, query, batch_id, counts, rows, records)
        if lost:
            total = sum(v for k, v in self.metrics.counts().items() if k.endswith(".lost"))
            self.metrics.alert(data_loss.ALERT, data_loss.alert(lost, total))

    def _lost(self, files: CheckpointFiles, batch_id: int) -> list[data_loss.Lost]:
        """Source records deleted between the last batch's end and this batch's read."""
        if not self.source_of or batch_id == 0:
            return []
        before, now = batch_offsets(files, batch_id - 1), batch_offsets(files, batch_id)
        if before is None or now is None:
            return []
        starts = {tp: o for tp, o in before[1].items() if tp[0] in self.source_of}
        admin = clients.shared_kafka_admin(self.config.kafka)  # asked every batch: one per process
        earliest = retry_kafka(
            lambda: data_loss.earliest_offsets(admin, starts),
            self.config.pipeline.retry_budget_seconds,
            "the sources' earliest offsets",
            on_retry=lambda line: self.metrics.alert(KAFKA_ALERT, line),
        )
        return data_loss.lost_ranges(starts, now[1], earliest)

    def run(self, batch: DataFrame, job: tasks.Job) -> list[tasks.TaskCount]:
        """The batch's work: each task's output, published exactly once; the tasks' counts."""
        return self.publish(self.output(batch, job), job)

    def output(self, batch: DataFrame, job: tasks.Job) -> DataFrame:
        """The batch's output rows (``tasks.OUTPUT_SCHEMA``): what its tasks did."""
        function = tasks.partition_function(job, self.work())
        return self.columns(batch).mapInArrow(function, tasks.OUTPUT_SCHEMA)

    def publish(self, output: DataFrame, job: tasks.Job) -> list[tasks.TaskCount]:
        """Each task's output published by the executor's JVM, exactly once; the tasks' counts.

        The only data of a batch the driver receives: a few count rows per task.
        """
        spark = output.sparkSession
        writer = spark._jvm.fusion.output.TransactionalWriter  # type: ignore[union-attr]
        return task_counts(writer.publish(output._jdf, self.spec(job, spark)))

    def spec(self, job: tasks.Job, spark: SparkSession) -> str:
        """What the executors' writer needs to publish this stage's batch."""
        return writer_spec(self.config, job, fault_settings(spark))

    def _commit(
        self,
        files: CheckpointFiles,
        query: str,
        batch_id: int,
        counts: dict[str, int],
        rows: list[tasks.TaskCount],
        records: list[OutRecord] | None = None,
    ) -> None:
        ends = batch_offsets(files, batch_id)
        positions = ends[1] if ends else {}
        counts = self.settle(ends[0] if ends else 0, counts)
        if not counts and positions == self._positions:
            return  # an idle trigger (the counter's timers run one): nothing to commit
        totals = self._cumulative(query)
        if self.lease.committed(query, batch_id) is not None:
            return  # a replay of a batch this stage finished and counted already
        offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        merged = {name: totals.get(name, 0) + counts.get(name, 0) for name in totals | counts}
        self.lease.publish(query, batch_id, records or [], merged, offsets, take_over=False)
        self.metrics.clear_alert(KAFKA_ALERT)
        self._totals = merged
        self._positions = positions
        self.metrics.add_all(counts)
        self._attribute(rows)

    def _attribute(self, rows: list[tasks.TaskCount]) -> None:
        """Which executor did what (a count attributed elsewhere is not the writer's)."""
        elsewhere = {found[0] for row in rows if (found := tasks.attribution(row.name))}
        for row in rows:
            found = tasks.attribution(row.name)
            if found is not None:
                self.metrics.add_executor(found[1], found[0], row.value)
            elif row.name not in elsewhere:
                self.metrics.add_executor(row.executor, row.name, row.value)

    def settle(self, batch_ms: int, counts: dict[str, int]) -> dict[str, int]:
        """The counts to commit of a batch with timestamp ``batch_ms`` (a hook: all of them)."""
        return counts

    def _query_id(self, files: CheckpointFiles) -> str:
        if self._query is None:
            found = query_id(files)
            if found is None:
                raise RuntimeError(f"no query metadata in {files.uri}")
            self._query = found
        return self._query

    def _cumulative(self, query: str) -> dict[str, int]:
        """The stage's counts so far: from its marker when the query (re)started."""
        if self._totals is None:
            marker = self.lease.last_marker()
            same = marker is not None and marker.query == query
            self._totals = dict(marker.counts) if marker is not None and same else {}
        return self._totals


def _short(query: str, error: Py4JJavaError) -> Exception:
    """The error to fail the micro-batch with: one readable line, not a stack trace.

    Spark matches the text of a foreachBatch error with a regular expression
    that recurses per character (``StreamExecution.PROXY_ERROR``) and
    overflows the JVM's stack on a long trace; a short text also reads better.
    A job cancelled because the query is being stopped keeps the words by
    which Spark recognises an interruption.
    """
    text = str(error)
    if any(sign in text for sign in ("InterruptedException", "SPARK_JOB_CANCELLED")):
        return InterruptedError(
            "py4j.protocol.Py4JJavaError: An error occurred while calling collectToPython: "
            "java.lang.InterruptedException (the query is stopping)"
        )
    return StageError(query, root_cause(text))


def task_counts(rows: str) -> list[tasks.TaskCount]:
    """The writer's answer (JSON rows ``[name, value, executor]``) as count rows."""
    return [
        tasks.TaskCount(name, int(value), executor) for name, value, executor in json.loads(rows)
    ]


def writer_spec(config: PipelineConfig, job: tasks.Job, faults: Mapping[str, str]) -> str:
    """What ``fusion.output.TransactionalWriter`` needs to publish a stage's batch."""
    kafka = {
        name.removeprefix("kafka."): value
        for name, value in config.kafka.as_spark_options().items()
        if name.startswith("kafka.")
    }
    # The producer refuses a record larger than this before the broker sees it.
    kafka["max.request.size"] = str(config.topic_message_bytes)
    return json.dumps(
        {
            "kafka": kafka,
            "transactional_prefix": f"fusion-{config.name}-{job.stage}",
            "markers_topic": config.markers_topic,
            "query": job.query,
            "batch": job.batch_id,
            "budget_ms": int(config.pipeline.retry_budget_seconds * 1000),
            "points": job.points,
            "faults": dict(faults),
            "spool_bytes": config.pipeline.task_chunk_bytes,
        }
    )


def fault_settings(spark: SparkSession) -> dict[str, str]:
    """The fault injection the tests ask for (:mod:`fusion.runtime.faults`), for JVM tasks too.

    A test sets it for the Python workers (``SparkContext.environment``) or for
    the whole process; Python tasks read their environment, JVM tasks get it here.
    """
    environment = spark.sparkContext.environment
    return {
        name: environment.get(name) or os.environ.get(name, "")
        for name in faults.ENV_NAMES
        if environment.get(name) or os.environ.get(name)
    }
