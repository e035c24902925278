"""The indexer query: one Structured Streaming query per source topic.

Spark reads the topic (``read_committed``); each micro-batch runs one
executor task per Kafka partition (:mod:`indexers.task`: parse, bulk-write
with ``refresh=wait_for``, then the acks and dead letters in one Kafka
transaction); the driver adds up the tasks' counts and commits the batch
(:class:`fusion.runtime.stage.BatchStage`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core.config import PipelineConfig, SourceConfig
from fusion.runtime.metrics import Metrics
from fusion.runtime.stage import BatchStage, read_kafka, start_foreach_batch
from fusion.runtime.tasks import Work
from indexers.task import IndexPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class IndexBatch(BatchStage):
    """The driver side of one source's indexer."""

    def __init__(self, config: PipelineConfig, source: SourceConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, f"indexer-{source.name}", "indexer")
        self.source = source

    def work(self) -> Work:
        return IndexPartition(self.source.name)


def start_indexer(
    spark: SparkSession, config: PipelineConfig, source: SourceConfig, metrics: Metrics
) -> StreamingQuery:
    """Start the indexer of ``source``, checkpointed under ``<checkpoint_dir>/indexer-<name>``."""
    stream = read_kafka(spark, config, config.topic_of(source))
    return start_foreach_batch(stream, IndexBatch(config, source, metrics))
