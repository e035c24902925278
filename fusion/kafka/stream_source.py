"""How Spark's Kafka source reads a pipeline's topics: one home for its options.

Committed records only (``read_committed``); a batch bounded by
``max_offsets_per_trigger``, and with ``min_offsets_per_trigger`` one that waits
for records up to ``max_trigger_delay``; a broker restart retried for as long
as the stages retry Elasticsearch.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusion.core import PipelineConfig


def spark_source_options(
    config: PipelineConfig, topics: Sequence[str], starting: str | None
) -> dict[str, str]:
    """Spark's Kafka source options for a read of ``topics``, from ``starting`` (its
    ``startingOffsets`` JSON) or the earliest offsets."""
    pipeline = config.pipeline
    options = config.kafka.as_spark_options() | {
        "subscribe": ",".join(topics),
        "startingOffsets": starting or "earliest",
        "kafka.isolation.level": "read_committed",
        "kafka.fetch.max.wait.ms": "5",
        "maxOffsetsPerTrigger": str(pipeline.max_offsets_per_trigger),
        "failOnDataLoss": "false",
        # A broker restart must not fail the query: keep asking for offsets, once a
        # second, for as long as the stages retry Elasticsearch.
        "fetchOffset.numRetries": str(int(pipeline.retry_budget_seconds)),
        "fetchOffset.retryIntervalMs": "1000",
    }
    if pipeline.min_offsets_per_trigger is not None:
        options["minOffsetsPerTrigger"] = str(pipeline.min_offsets_per_trigger)
        options["maxTriggerDelay"] = f"{round(pipeline.max_trigger_delay * 1000)}ms"
    return options
