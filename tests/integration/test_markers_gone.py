"""A batch left to replay whose exactly-once markers Kafka expired: refused, with a way out.

Kafka deletes consumer-group offsets (the markers) ``offsets.retention.minutes``
after their last commit. The test makes the state such a long stop leaves:
an indexer ran, its last batch is planned but not committed (its commit log
entry removed, as a crash before Spark's commit leaves it), and its markers
are deleted (``deleteConsumerGroups``, what expiry does to them). With the
markers there, the replay runs and publishes nothing twice; without them,
the start stops with one line naming the batch and the way out
(``--replay-unmarked``), which replays it and goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fusion import pipeline
from fusion.bench.generator import produce
from fusion.core.settings import Settings
from fusion.kafka import client as kafka_client
from fusion.kafka.errors import MarkersGoneError
from fusion.observe.metrics import Metrics
from fusion.observe.names import REPLAY_ALERT
from fusion.spark.checkpoint import CheckpointFiles, committed_batches
from fusion.topology import indexer_name, topology_of
from tests.integration.pipelines import drop, make_config, read_topic, run_pipeline, source_record

ONLY = "indexer:billing"


def _uncommit_last_batch(files: CheckpointFiles) -> int:
    """The state a crash after the tasks' commits, before Spark's, leaves: the batch is replayed."""
    last = committed_batches(files)[-1]
    files.delete(f"commits/{last}")
    files.delete(f"commits/.{last}.crc")
    return last


def test_a_replay_without_its_markers_is_refused_at_start(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"], layout="stages")
    stage = indexer_name("billing")
    files = CheckpointFiles(spark, config.checkpoint(stage))
    try:
        # Two runs: a checkpoint with committed batches before the one left to replay.
        for first in (0, 3):
            records = [source_record(config, "billing", f"K{i}") for i in range(first, first + 3)]
            produce(config, records)
            run_pipeline(spark, config, lambda m: m.get("indexer.billing.acks") >= 3, ONLY)

        # Markers there: the replay is exactly once.
        replayed = _uncommit_last_batch(files)
        run_pipeline(spark, config, lambda _: replayed in committed_batches(files), ONLY)
        assert len(read_topic(settings, config.acks_topic)) == 6

        # Markers gone: refused before anything runs.
        pending = _uncommit_last_batch(files)
        admin = kafka_client.admin(config.kafka)
        for future in admin.delete_consumer_groups([f"fusion-{config.name}-{stage}"]).values():
            future.result(30)
        with pytest.raises(MarkersGoneError) as refused:
            pipeline.start(spark, config, topology_of(config).select(ONLY), Metrics())
        message = str(refused.value)
        assert f"batch {pending} was started but never committed" in message
        assert "offsets.retention.minutes" in message and "\n" not in message
        assert "fusion run --replay-unmarked" in message

        # The way out it names: replayed, its duplicates accepted, and the pipeline goes on.
        section = config.pipeline.model_copy(update={"replay_unmarked": True})
        config = config.model_copy(update={"pipeline": section})
        produce(config, [source_record(config, "billing", "K9", amount=9)])

        def acked_k9(_: Metrics) -> bool:
            return "K9" in {key for key, _ in read_topic(settings, config.acks_topic)}

        metrics = run_pipeline(spark, config, acked_k9, ONLY)
        assert pending in committed_batches(files)
        assert "without its markers" in metrics.alerts()[REPLAY_ALERT]
    finally:
        drop(config)
