"""A checkpoint older than the counter's memory of keys: said at start, with the way out.

Spark's state TTL (``state_ttl`` and its margin, :func:`retention_ms`) counts
from the timestamp of the batch that last changed a key. A pipeline stopped
for longer than that finds, on restart, the state of its waiting keys gone
(their deadlines still report them, :mod:`fusion.counter.decisions`); and a
batch replayed at restart keeps the timestamp it was planned with, so what it
counts is dropped as soon as the next batch runs. Such keys are reported
incomplete although Elasticsearch may hold them complete: ``fusion
reconcile`` enriches them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.counter.decisions import retention_ms
from fusion.spark import CheckpointFiles, batch_offsets, committed_batches, planned_batches
from fusion.topology import topology_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def outlived_state(spark: SparkSession, config: PipelineConfig, now_ms: int) -> str | None:
    """One line if the counter's query last planned a batch longer ago than it keeps keys."""
    if config.pipeline.state_ttl is None:
        return None
    files = CheckpointFiles(spark, config.checkpoint(topology_of(config).counter_query))
    planned = planned_batches(files)
    found = batch_offsets(files, planned[-1]) if planned else None
    if found is None:
        return None
    committed = committed_batches(files)
    replayed = not committed or committed[-1] < planned[-1]
    return outlived_line(found[0], replayed, now_ms, int(config.pipeline.state_ttl * 1000))


def outlived_line(last_batch_ms: int, replayed: bool, now_ms: int, state_ttl_ms: int) -> str | None:
    """What a stop longer than Spark's state TTL cost, and the fix; None after a shorter one.

    ``last_batch_ms``: the timestamp of the last batch the query planned;
    ``replayed``: that batch never committed, so it runs again with it.
    """
    kept_ms = retention_ms(state_ttl_ms)
    stopped_ms = now_ms - last_batch_ms
    if stopped_ms <= kept_ms:
        return None
    lost = "the state of keys still waiting"
    if replayed:
        lost += " and what the batch replayed now counts (it keeps its old timestamp)"
    return (
        f"the counter's last batch was planned {_minutes(stopped_ms)} ago, longer than it "
        f"keeps a key (state_ttl and its margin, {_minutes(kept_ms)}): Spark drops {lost}, "
        "and such keys are reported incomplete; once caught up, run `fusion reconcile` to "
        "enrich every key Elasticsearch holds complete"
    )


def _minutes(ms: int) -> str:
    return f"{ms / 60_000:,.1f} min"
