"""The enricher query: ready events in, one enriched document per key out.

It reads the ready topic, the updates topic (``on_update = "reenrich"``: a
fired key changed, rewrite its document) and, with ``on_timeout = "partial"``,
the incomplete topic (write a ``"complete": false`` document). Each
micro-batch runs one executor task per Kafka partition
(:mod:`fusion.enricher.task`: look up, build, bulk-write, publish); the
driver adds up the tasks' counts and commits the batch
(:class:`fusion.spark.stage.BatchStage`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.enricher.spec import enrich_spec
from fusion.enricher.task import EnrichPartition
from fusion.observe import Metrics
from fusion.spark import BatchStage, Work, read_kafka, resume, start_foreach_batch
from fusion.topology import Query

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class EnrichBatch(BatchStage):
    """The driver side of the enricher."""

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, "enricher", "enricher")
        self.task_spec = enrich_spec(config)

    def work(self) -> Work:
        return EnrichPartition(self.task_spec)


def start_enricher(
    spark: SparkSession, config: PipelineConfig, query: Query, metrics: Metrics
) -> StreamingQuery:
    topics = list(query.reads)
    starting = resume.starting(spark, config, query.name, topics)
    stream = read_kafka(spark, config, *topics, starting=starting)
    return start_foreach_batch(stream, EnrichBatch(config, metrics))
