"""The whole pipeline as one Spark query (``layout = "single"``, the default).

Each micro-batch of the single query takes a key from its source records to
its enriched document:

1. **index**: a Python task per Kafka partition of the source topics parses
   the records and bulk-writes them with ``refresh=wait_for``
   (:func:`indexers.task.index_records`, as the indexer query does);
2. **ack**: in the same task, the executor's JVM publishes the acks and dead
   letters exactly once and hands the acks on
   (``fusion.output.IndexPublisher``, the rows of :mod:`indexers.handoff`);
3. **count**: the acks are grouped by join key into the counter's keyed state
   (``fusion.counter.AckCounter``), which decides the fires;
4. **enrich and publish**: a Python task per state partition looks up and
   writes the enriched documents of what fired, and the executor's JVM
   publishes the events and enriched records exactly once
   (:class:`fusion.counter.query.CounterBatch`, as with ``enrich_in = "counter"``).

A key is enriched in the micro-batch its last source record arrives in: one
hop where the stages layout takes two (source → ack topic → counter), each
of which pays a micro-batch's fixed cost and waits for the next trigger. The
acks still go to the ack topic; a single query does not read them back.

Spark commits the batch (its source offsets and the counter's state) only
after every task's transaction committed; a replay recomputes the same acks
from the same records (Elasticsearch keeps the versions, the ack publisher
its markers) and the same decisions from the same state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core import ConfigError, PipelineConfig
from fusion.counter import CounterBatch, Rules, engine_of, restored_state, start_with_clock
from fusion.observe import Metrics
from fusion.spark import (
    KAFKA_SELECT,
    CheckpointFiles,
    Job,
    fault_settings,
    partition_function,
    read_with_clock,
    writer_spec,
)
from fusion.topology import COUNTER, SINGLE, Query, routes, sources_read
from indexers import HANDOFF_SCHEMA, IndexPartition, handoff_batch, index_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def start_single(
    spark: SparkSession, config: PipelineConfig, query: Query, metrics: Metrics
) -> StreamingQuery:
    """Start the single query (and, with deadlines, the counter's clock)."""
    refuse_a_stages_checkpoint(spark, config)
    stage = CounterBatch(config, metrics, query)
    stage.source_of = sources_read(routes(config, query))  # its data-loss check
    return start_with_clock(spark, config, stage, indexed_and_counted(spark, config, query))


def indexed_and_counted(spark: SparkSession, config: PipelineConfig, query: Query) -> DataFrame:
    """The source topics, indexed and acked, through the counter's keyed state."""
    stream = read_with_clock(spark, config, query.name, *query.reads)
    # The indexer's writer: ids fusion-<pipeline>-single-index@<topic>-<partition>; it reads
    # the query and batch from the job it runs in.
    chunk_bytes = config.pipeline.task_chunk_bytes
    job = Job(f"{query.name}-index", "indexer", query="", batch_id=-1, chunk_bytes=chunk_bytes)
    work = IndexPartition(routes(config, query), index_spec(config, query.sources))
    task = partition_function(job, work, handoff_batch)
    indexed = stream.selectExpr(*KAFKA_SELECT).mapInArrow(task, HANDOFF_SCHEMA)
    spec = writer_spec(config, job, fault_settings(spark))
    initial = restored_state(spark, config)
    return engine_of(config).index_and_count(indexed, spec, Rules.of(config), initial)


def refuse_a_stages_checkpoint(spark: SparkSession, config: PipelineConfig) -> None:
    """The counter's state of a stages run stays in its checkpoint: say so, do not start empty."""
    single = CheckpointFiles(spark, config.checkpoint(SINGLE))
    stages = CheckpointFiles(spark, config.checkpoint(COUNTER))
    if not single.exists("offsets") and stages.exists("offsets"):
        raise ConfigError(
            "[pipeline] layout",
            "single",
            f"the counter's state is in {config.checkpoint('counter')} (layout = "
            '"stages"); keep layout = "stages", or delete the pipeline\'s checkpoints to start '
            "afresh",
        )
