"""The indexer query: one Structured Streaming query over every source topic.

Spark reads the source topics (``read_committed``); each micro-batch runs one
executor task per Kafka partition (:mod:`indexers.task`: parse, bulk-write
with ``refresh=wait_for`` into the partition's source index, then the acks
and dead letters in one Kafka transaction); the driver adds up the tasks'
counts and commits the batch (:class:`fusion.spark.stage.BatchStage`).

One query reads every source by default (``indexers``): each query pays a
fixed planning and commit cost per micro-batch, whatever its size, so one
query over N topics costs a fraction of N queries of one. A source still has
its own index, offsets, dead letters and counts (``indexer.<source>.*``).
``fusion run --only indexer:<source>`` runs one source's indexer as a query
of its own (``indexer-<source>``), for a deployment of one process per source.

A query started without a checkpoint starts where the pipeline's other
indexer queries left each topic (their committed offsets), so switching
between one query and one per source neither skips nor re-reads records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.kafka import lag
from fusion.observe import Metrics
from fusion.spark import BatchStage, CheckpointFiles, Work, read_kafka, resume, start_foreach_batch
from fusion.topology import Query, routes, source_readers, sources_read, topology_of
from indexers.spec import index_spec
from indexers.task import IndexPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class IndexBatch(BatchStage):
    """The driver side of an indexer query (of every source, or of one)."""

    def __init__(self, config: PipelineConfig, query: Query, metrics: Metrics) -> None:
        super().__init__(config, metrics, query.name, "indexer")
        self.routes = routes(config, query)
        # Its source topics (the data-loss check, fusion.spark.stage).
        self.source_of = sources_read(self.routes)
        self.task_spec = index_spec(config, query.sources)

    def work(self) -> Work:
        return IndexPartition(self.routes, self.task_spec)


def start_indexer(
    spark: SparkSession, config: PipelineConfig, query: Query, metrics: Metrics
) -> StreamingQuery:
    """Start an indexer query, checkpointed under ``<checkpoint_dir>/<its name>``."""
    stage = IndexBatch(config, query, metrics)
    topics = list(query.reads)
    files = CheckpointFiles(spark, config.checkpoint(stage.name))
    # A new indexer query starts where the others left; rebuilt, where it left too.
    inputs = topology_of(config).inputs()
    readers = [n for n in source_readers(config.source_names) if n in inputs]
    others = {n: inputs[n] for n in readers if n != stage.name}
    own = {stage.name: query.reads} if resume.rebuilding(spark, config, stage.name) else {}
    fresh = not files.exists("offsets")
    starting = lag.resume_offsets(config, others | own, topics) if fresh else None
    stream = read_kafka(spark, config, *topics, starting=starting)
    return start_foreach_batch(stream, stage)
