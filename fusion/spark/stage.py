"""Every stage's driver side: the foreachBatch handler :class:`BatchStage`.

A stage is a foreachBatch query (started by :mod:`fusion.spark.queries`) whose
per-record work runs in executor tasks (:mod:`fusion.spark.tasks`). Per
micro-batch, :class:`BatchStage`:

1. maps the batch with the stage's task function (``mapInArrow``), one task
   per input partition; the tasks write Elasticsearch and publish their own
   Kafka records exactly once;
2. adds up what the tasks counted: a few ``(name, value, executor)`` rows per
   task, the only data of a batch the driver ever holds;
3. commits the batch on the driver's own transactional id: a marker with the
   stage's cumulative counts, plus the batch's end offsets as the stage's
   consumer-group offsets. Another process that runs the same query fences
   this one (:class:`~fusion.kafka.errors.FencedError`), and ``fusion status``
   reads every component's counts and lag from Kafka, whichever process runs it.

Spark commits the batch after the handler returns; a replay after a crash
finds the tasks' and the driver's markers and neither writes nor counts twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from confluent_kafka import TopicPartition
from py4j.protocol import Py4JJavaError

from fusion.core import PipelineConfig, dead_letter_records
from fusion.kafka import OutRecord, TransactionalOutput, data_loss, retry_kafka
from fusion.kafka import client as kafka_client
from fusion.observe import DATA_LOSS_ALERT, KAFKA_ALERT, Figures, Metrics
from fusion.spark import resume, tasks
from fusion.spark.causes import root_cause
from fusion.spark.checkpoint import (
    CheckpointFiles,
    batch_offsets,
    query_id,
)
from fusion.spark.errors import StageError
from fusion.spark.jvm_writer import fault_settings, task_counts, writer_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class BatchStage:
    """The driver side of a stage's foreachBatch (see the module docstring).

    Subclasses name the query (``name``), the prefix of their crash points (``crash_prefix``) and
    give the task function (:meth:`work`) and the columns it reads (:meth:`columns`).
    """

    def __init__(
        self, config: PipelineConfig, metrics: Metrics, name: str, crash_prefix: str
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.name = name
        self.crash_prefix = crash_prefix
        self.driver_output = TransactionalOutput(
            config.kafka,
            f"fusion-{config.name}-{name}",
            config.markers_topic,
            config.pipeline.retry_budget_seconds,
            f"{crash_prefix}.driver",
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
        return batch.selectExpr(*tasks.KAFKA_SELECT)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        files = CheckpointFiles(batch.sparkSession, self.config.checkpoint(self.name))
        query = self._query_id(files)
        chunk_bytes = self.config.pipeline.task_chunk_bytes
        job = tasks.Job(self.name, self.crash_prefix, query, batch_id, chunk_bytes)
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
            total = Figures(self.metrics.counts()).lost
            self.metrics.alert(DATA_LOSS_ALERT, data_loss.alert(lost, total))

    def _lost(self, files: CheckpointFiles, batch_id: int) -> list[data_loss.Lost]:
        """Source records deleted between the last batch's end and this batch's read."""
        if not self.source_of or batch_id == 0:
            return []
        before, now = batch_offsets(files, batch_id - 1), batch_offsets(files, batch_id)
        if before is None or now is None:
            return []
        starts = {tp: o for tp, o in before[1].items() if tp[0] in self.source_of}
        admin = kafka_client.shared_admin(self.config.kafka)  # asked every batch: one per process
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
        counts = self.counts_to_commit(ends[0] if ends else 0, counts)
        if not counts and positions == self._positions:
            return  # an idle trigger (the counter's timers run one): nothing to commit
        totals = self._cumulative(query, files)
        if self.driver_output.committed(query, batch_id) is not None:
            return  # a replay of a batch this stage finished and counted already
        offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        merged = {name: totals.get(name, 0) + counts.get(name, 0) for name in totals | counts}
        self.driver_output.publish(query, batch_id, records or [], merged, offsets, take_over=False)
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

    def counts_to_commit(self, batch_ms: int, counts: dict[str, int]) -> dict[str, int]:
        """The counts to commit of a batch with timestamp ``batch_ms``.

        A hook: all of them here; the counter keeps its clock's deadline buckets apart.
        """
        return counts

    def _query_id(self, files: CheckpointFiles) -> str:
        if self._query is None:
            found = query_id(files)
            if found is None:
                raise RuntimeError(f"no query metadata in {files.uri}")
            self._query = found
        return self._query

    def _cumulative(self, query: str, files: CheckpointFiles) -> dict[str, int]:
        """The stage's counts so far: from its marker when the query (re)started.

        A query on a new checkpoint starts from zero, but for one whose state was
        rebuilt (the lost checkpoint's query goes on under a new id)."""
        if self._totals is None:
            marker = self.driver_output.last_marker()
            ours = marker is not None and (
                marker.query == query or files.exists(resume.REBUILD_FILE)
            )
            self._totals = dict(marker.counts) if marker is not None and ours else {}
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
