"""Read the counter's keyed state from its checkpoint (Spark's ``statestore`` data source).

A batch read of the last committed state version: it works while the pipeline
runs (it only reads checkpoint files) and after it stopped. Keys whose state
TTL ran out are gone from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fusion.core.config import PipelineConfig
from fusion.counter.decisions import STATE_COLUMNS, KeyState
from fusion.runtime.checkpoint import CheckpointFiles, committed_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STATE_VAR = "key_state"  # the ValueState name in fusion.counter.query.AckCounter


def has_state(spark: SparkSession, config: PipelineConfig) -> bool:
    """Whether the counter committed at least one batch (before that there is nothing to read)."""
    return bool(committed_batches(CheckpointFiles(spark, config.checkpoint(config.counter_query))))


def states(spark: SparkSession, config: PipelineConfig, batch_id: int | None = None) -> DataFrame:
    """Every key's state (columns ``k``, the state's, ``ttlExpirationMs``): the last
    committed version, or the one of ``batch_id``."""
    reader = spark.read.format("statestore").option("stateVarName", STATE_VAR)
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    return reader.load(config.checkpoint(config.counter_query)).select(
        "key.k", "value.value.*", "value.ttlExpirationMs"
    )


def key_state(spark: SparkSession, config: PipelineConfig, key: str) -> tuple[KeyState, int] | None:
    """The counter's state of ``key`` and when (epoch ms) its TTL ends, or None."""
    from pyspark.sql import functions as F

    if not has_state(spark, config):
        return None
    rows = states(spark, config).where(F.col("k") == key).collect()
    if not rows:
        return None
    row = rows[0]
    return _to_state(row), int(row.ttlExpirationMs or 0)


def all_states(spark: SparkSession, config: PipelineConfig) -> Iterator[KeyState]:
    """Every key's state (streamed to the driver a partition at a time)."""
    if not has_state(spark, config):
        return
    for row in states(spark, config).toLocalIterator():
        yield _to_state(row)


def _to_state(row: object) -> KeyState:
    return KeyState.from_row(tuple(getattr(row, name) for name, _ in STATE_COLUMNS))
