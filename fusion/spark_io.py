"""The Spark wiring every stage shares: how Fusion reads Kafka and starts a query."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fusion import clients
from fusion.bulk import Confirmed
from fusion.config import PipelineConfig
from fusion.events import DeadLetter, dumps
from fusion.metrics import Metrics
from fusion.output import BatchOutput, OutRecord
from fusion.retry import RetryPolicy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def read_kafka(spark: SparkSession, config: PipelineConfig, *topics: str) -> DataFrame:
    """A streaming read of ``topics``: committed records only (``read_committed``), from the start.

    ``failOnDataLoss`` is off so that a topic whose old records retention already
    deleted does not stop the pipeline; ``fusion reconcile`` covers such gaps.
    """
    options = config.kafka.as_spark_options() | {
        "subscribe": ",".join(topics),
        "startingOffsets": "earliest",
        "kafka.isolation.level": "read_committed",
        "maxOffsetsPerTrigger": str(config.pipeline.max_offsets_per_trigger),
        "failOnDataLoss": "false",
        # A broker restart must not fail the query: keep asking for offsets, once a
        # second, for as long as the stages retry Elasticsearch.
        "fetchOffset.numRetries": str(int(config.pipeline.retry_budget_seconds)),
        "fetchOffset.retryIntervalMs": "1000",
    }
    return spark.readStream.format("kafka").options(**options).load()


def start_foreach_batch(stream: DataFrame, stage: BatchStage) -> StreamingQuery:
    """Start ``stream`` into ``stage``, checkpointed under ``<checkpoint_dir>/<stage.name>``."""
    config = stage.config
    return (
        stream.writeStream.queryName(f"{config.name}-{stage.name}")
        .foreachBatch(stage)
        .option("checkpointLocation", str(stage.checkpoint))
        .trigger(processingTime=config.pipeline.trigger_interval)
        .start()
    )


class BatchStage:
    """Base of the foreachBatch handlers: the clients a stage needs, built once per query.

    The handlers run in the driver, so these clients live as long as the query.
    ``output`` writes a batch's Kafka records exactly once (:mod:`fusion.output`).
    """

    def __init__(self, config: PipelineConfig, metrics: Metrics, name: str) -> None:
        self.config = config
        self.metrics = metrics
        self.name = name
        self.checkpoint = config.checkpoint_dir / name
        self.es = clients.elasticsearch(config.elasticsearch)
        self.output = BatchOutput(config, name, metrics)
        self.retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)

    def dlq_records(self, letters: Iterable[DeadLetter]) -> list[OutRecord]:
        return [(self.config.dlq_topic, letter.key, letter.to_bytes()) for letter in letters]

    def enriched_records(self, confirmed: Iterable[Confirmed]) -> list[OutRecord]:
        """The enriched topic's records for documents Elasticsearch confirmed."""
        topic = self.config.enriched_topic
        return [(topic, item.record.key, dumps(item.record.doc)) for item in confirmed]

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        raise NotImplementedError
