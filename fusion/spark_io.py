"""The Spark wiring every stage shares: how Fusion reads Kafka and starts a query."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fusion import clients
from fusion.config import PipelineConfig
from fusion.metrics import Metrics
from fusion.publisher import Publisher

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def read_kafka(spark: SparkSession, config: PipelineConfig, topic: str) -> DataFrame:
    """A streaming read of ``topic``: committed records only (``read_committed``), from the start.

    ``failOnDataLoss`` is off so that a topic whose old records retention already
    deleted does not stop the pipeline; ``fusion reconcile`` covers such gaps.
    """
    options = config.kafka.as_spark_options() | {
        "subscribe": topic,
        "startingOffsets": "earliest",
        "kafka.isolation.level": "read_committed",
        "maxOffsetsPerTrigger": str(config.pipeline.max_offsets_per_trigger),
        "failOnDataLoss": "false",
    }
    return spark.readStream.format("kafka").options(**options).load()


def start_foreach_batch(
    stream: DataFrame,
    config: PipelineConfig,
    name: str,
    handler: Callable[[DataFrame, int], Any],
) -> StreamingQuery:
    """Start ``stream`` into ``handler``, checkpointed under ``<checkpoint_dir>/<name>``."""
    return (
        stream.writeStream.queryName(f"{config.name}-{name}")
        .foreachBatch(handler)
        .option("checkpointLocation", str(config.checkpoint_dir / name))
        .trigger(processingTime=config.pipeline.trigger_interval)
        .start()
    )


class BatchStage:
    """Base of the foreachBatch handlers: the clients a stage needs, built once per query.

    The handlers run in the driver, so these clients live as long as the query.
    """

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        self.config = config
        self.metrics = metrics
        self.es = clients.elasticsearch(config.elasticsearch)
        self.publisher = Publisher(config.kafka)
