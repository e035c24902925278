"""Read the counter's keyed state from its checkpoint (Spark's ``statestore`` data source).

A batch read of the last committed state version: it works while the pipeline
runs (it only reads checkpoint files) and after it stopped. Keys whose state
TTL ran out are gone from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from fusion.config import PipelineConfig
from fusion.counter import STATE_COLUMNS, KeyState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STATE_VAR = "key_state"  # the ValueState name in fusion.counter_query.AckCounter


def counter_checkpoint(config: PipelineConfig) -> Path:
    return config.checkpoint_dir / "counter"


def has_state(config: PipelineConfig) -> bool:
    """Whether the counter committed at least one batch (before that there is nothing to read)."""
    commits = counter_checkpoint(config) / "commits"
    return commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir())


def _states(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    reader = spark.read.format("statestore").option("stateVarName", STATE_VAR)
    return reader.load(str(counter_checkpoint(config))).select(
        "key.k", "value.value.*", "value.ttlExpirationMs"
    )


def key_state(spark: SparkSession, config: PipelineConfig, key: str) -> tuple[KeyState, int] | None:
    """The counter's state of ``key`` and when (epoch ms) its TTL ends, or None."""
    from pyspark.sql import functions as F

    if not has_state(config):
        return None
    rows = _states(spark, config).where(F.col("k") == key).collect()
    if not rows:
        return None
    row = rows[0]
    return _to_state(row), int(row.ttlExpirationMs or 0)


def all_states(spark: SparkSession, config: PipelineConfig) -> Iterator[KeyState]:
    """Every key's state (streamed to the driver a partition at a time)."""
    if not has_state(config):
        return
    for row in _states(spark, config).toLocalIterator():
        yield _to_state(row)


def _to_state(row: object) -> KeyState:
    return KeyState.from_row(tuple(getattr(row, name) for name, _ in STATE_COLUMNS))
