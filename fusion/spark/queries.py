"""Reading Kafka as a stream and starting a stage's foreachBatch query."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.kafka import Marker, MarkersGoneError, replay_unmarked, spark_source_options
from fusion.observe import REPLAY_ALERT
from fusion.spark import resume, tasks
from fusion.spark.checkpoint import (
    CheckpointFiles,
    committed_batches,
    planned_batches,
    query_id,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from fusion.spark.stage import BatchStage


ARROW_BATCH_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
LOCAL_CHECKPOINT_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
POOL = "spark.scheduler.pool"


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
    options = spark_source_options(config, topics, starting)
    return spark.readStream.format("kafka").options(**options).load()


def read_with_clock(
    spark: SparkSession, config: PipelineConfig, query: str, *topics: str
) -> DataFrame:
    """``topics``, ticking with the deadline clock when the pipeline has deadlines.

    The clock topic's ticks make micro-batches (which fire due timers) and are
    dropped here, before any record is read: no stage sees a tick as a record.
    ``query``: the query that reads them (where it starts: :mod:`fusion.spark.resume`).
    """
    from pyspark.sql import functions as F

    read = [*topics, *[config.clock_topic] * config.has_deadlines]
    starting = resume.starting(spark, config, query, read)
    stream = read_kafka(spark, config, *read, starting=starting)
    if config.has_deadlines:
        stream = stream.where(F.col("topic") != F.lit(config.clock_topic))
    return stream


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
    marker = stage.driver_output.last_marker()
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
    if not stage.config.pipeline.replay_unmarked:
        raise MarkersGoneError(name, pending)
    message = f"{name}: replaying batch {pending} without its markers (its output may repeat)"
    stage.metrics.alert(REPLAY_ALERT, message)


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
