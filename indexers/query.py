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

from fusion.core.config import PipelineConfig
from fusion.kafka import lag
from fusion.observe.metrics import Metrics
from fusion.spark import resume
from fusion.spark.checkpoint import CheckpointFiles
from fusion.spark.queries import read_kafka, start_foreach_batch
from fusion.spark.stage import BatchStage
from fusion.spark.tasks import Work
from indexers.task import IndexPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class IndexBatch(BatchStage):
    """The driver side of the indexer of ``sources`` (every source, or one)."""

    def __init__(self, config: PipelineConfig, sources: tuple[str, ...], metrics: Metrics) -> None:
        super().__init__(config, metrics, lag.indexer_stage(config, sources), "indexer")
        self.sources = sources
        self.source_of = {config.topic_of(config.source(s)): s for s in sources}

    def work(self) -> Work:
        by_topic = {self.config.topic_of(self.config.source(s)): s for s in self.sources}
        return IndexPartition(by_topic)


def start_indexer(
    spark: SparkSession, config: PipelineConfig, sources: tuple[str, ...], metrics: Metrics
) -> StreamingQuery:
    """Start the indexer of ``sources``, checkpointed under ``<checkpoint_dir>/<its name>``."""
    stage = IndexBatch(config, sources, metrics)
    topics = config.input_topics(sources)
    files = CheckpointFiles(spark, config.checkpoint(stage.name))
    # A new indexer query starts where the others left; rebuilt, where it left too.
    others = [s for s in lag.indexer_stages(config) if s != stage.name]
    own = [stage.name] * resume.rebuilding(spark, config, stage.name)
    fresh = not files.exists("offsets")
    starting = lag.resume_offsets(config, others + own, topics) if fresh else None
    stream = read_kafka(spark, config, *topics, starting=starting)
    return start_foreach_batch(stream, stage)
