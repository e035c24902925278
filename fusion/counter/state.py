"""Read the counter's keyed state from its checkpoint (Spark's ``statestore`` data source).

A batch read of the last committed state version: it works while the pipeline
runs (it only reads checkpoint files) and after it stopped. Keys whose state
TTL ran out are gone from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.counter.decisions import Rules
from fusion.counter.key_state import STATE_COLUMNS, KeyState
from fusion.spark import CheckpointFiles, committed_batches
from fusion.topology import topology_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STATE_VAR = "key_state"  # the ValueState name in fusion.counter.query.AckCounter


def has_state(spark: SparkSession, config: PipelineConfig) -> bool:
    """Whether the counter committed at least one batch (before that there is nothing to read)."""
    return bool(
        committed_batches(
            CheckpointFiles(spark, config.checkpoint(topology_of(config).counter_query))
        )
    )


def states(spark: SparkSession, config: PipelineConfig, batch_id: int | None = None) -> DataFrame:
    """Every key's state (columns ``k``, the state's, ``ttlExpirationMs``): the last
    committed version, or the one of ``batch_id``."""
    reader = spark.read.format("statestore").option("stateVarName", STATE_VAR)
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    return reader.load(config.checkpoint(topology_of(config).counter_query)).select(
        "key.k", "value.value.*", "value.ttlExpirationMs"
    )


def state_of_key(
    spark: SparkSession, config: PipelineConfig, key: str
) -> tuple[KeyState, int] | None:
    """The counter's state of ``key`` and when (epoch ms) its TTL ends, or None."""
    from pyspark.sql import functions as F

    if not has_state(spark, config):
        return None
    rows = states(spark, config).where(F.col("k") == key).collect()
    if not rows:
        return None
    row = rows[0]
    return _to_state(row), int(row.ttlExpirationMs or 0)


def _to_state(row: object) -> KeyState:
    return KeyState.from_row(tuple(getattr(row, name) for name, _ in STATE_COLUMNS))


@dataclass(frozen=True)
class StateSummary:
    """What ``fusion status`` tells of the state: keys, pending keys, and what they miss."""

    keys: int = 0
    pending: int = 0  # neither fired nor reported incomplete
    pending_by_missing: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, states: Iterable[KeyState], rules: Rules) -> StateSummary:
        """The summary of ``states``, as :func:`summary` counts it on the executors."""
        listed = list(states)
        pending = [s for s in listed if not s.fired and s.expired_at is None]
        by_missing = Counter(name for s in pending for name in s.missing(rules.sources))
        return cls(len(listed), len(pending), dict(sorted(by_missing.items())))


def summary(spark: SparkSession, config: PipelineConfig) -> StateSummary:
    """The state's summary, counted by a Spark aggregate: one row reaches the driver.

    However many keys the state holds, the driver's memory stays flat (it used
    to stream every key's state to the driver)."""
    from pyspark.sql import functions as F

    if not has_state(spark, config):
        return StateSummary()
    sources = sorted(config.parts)
    seen = F.from_json(F.col("seen"), "map<string,array<string>>")
    pending = F.col("fired_at").isNull() & F.col("expired_at").isNull()
    counts = [F.count(F.lit(1)), F.sum(pending.cast("long"))] + [
        F.sum((pending & ~F.map_contains_key(seen, name)).cast("long")) for name in sources
    ]
    row = states(spark, config).agg(*counts).first()
    assert row is not None  # an aggregate without grouping has one row
    keys, pending_keys, *missing = (int(value or 0) for value in row)
    by_missing = {name: n for name, n in zip(sources, missing, strict=True) if n}
    return StateSummary(keys, pending_keys, by_missing)
