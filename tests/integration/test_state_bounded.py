"""The counter's state stays bounded: a key stays exactly as long as its state TTL, then goes.

Each check reads the state Spark committed after a given micro-batch (the
``statestore`` reader at that batch id) and that batch's timestamp T from
the checkpoint's offset log, and compares it with what the TTL implies: a
fired key's state expires Spark's TTL (``state_ttl`` and its margin) after
the batch that fired it (the ready event's ``fired_at``), so the state after
batch T holds exactly the keys whose expiry is later than T. This holds
however fast the machine is; the batch that fired a wave's last keys always
holds those keys, so the check is never vacuous.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.counter.decisions import retention_ms
from fusion.counter.state import states
from fusion.kafka import lag
from fusion.spark.checkpoint import (
    CheckpointFiles,
    batch_offsets,
    committed_batches,
    planned_batches,
)
from fusion.topology import topology_of
from tests.integration.pipelines import RunningPipeline, drop, make_config, read_topic

WAVES = 3
KEYS_PER_WAVE = 100
TTL_SECONDS = 6
IDLE_TRIGGERS = 20  # trigger intervals (200 ms in the tests) an idle counter is watched


def _batch_time(files: CheckpointFiles, batch_id: int) -> int:
    found = batch_offsets(files, batch_id)
    assert found is not None, f"no offset log for batch {batch_id}"
    return found[0]


def _state_after(spark: Any, config: PipelineConfig, batch_id: int) -> dict[str, int]:
    """Key -> state expiry (epoch ms) in the state Spark committed after ``batch_id``."""
    rows = states(spark, config, batch_id).select("k", "ttlExpirationMs").collect()
    return {row.k: int(row.ttlExpirationMs) for row in rows}


def _check(spark: Any, config: PipelineConfig, batch_id: int, fired_ms: dict[str, int]) -> int:
    """The state after ``batch_id`` is exactly the fired keys whose TTL had not passed."""
    files = CheckpointFiles(spark, config.checkpoint(topology_of(config).counter_query))
    at = _batch_time(files, batch_id)
    held = _state_after(spark, config, batch_id)
    ttl_ms = retention_ms(TTL_SECONDS * 1000)  # Spark's TTL: state_ttl and its margin
    for key, expires in held.items():
        assert expires == fired_ms[key] + ttl_ms, (key, "expiry is the fire time + the TTL")
    alive = {key for key, fired in fired_ms.items() if fired <= at < fired + ttl_ms}
    assert set(held) == alive, (batch_id, len(held), len(alive))
    return len(held)


def _fired_ms(settings: Settings, config: PipelineConfig) -> dict[str, int]:
    ready = read_topic(settings, config.ready_topic)
    return {
        key or "": round(datetime.fromisoformat(event["fired_at"]).timestamp() * 1000)
        for key, event in ready
    }


def _counter(run: RunningPipeline) -> Any:
    counting = topology_of(run.config).counter_query
    (counter,) = [q for q in run.queries if q.name.endswith(f"-{counting}")]
    return counter


def _counter_busy(run: RunningPipeline) -> bool:
    return bool(_counter(run).status["isTriggerActive"])


def _rejected_record(config: PipelineConfig) -> tuple[str, str, bytes]:
    """A source record the indexer dead-letters: it brings a batch, and no state of its own."""
    return (config.topic_of(config.source("billing")), "nudge", b"not json")


def test_a_key_stays_exactly_as_long_as_its_state_ttl(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"], state_ttl=f"{TTL_SECONDS}s")
    files = CheckpointFiles(spark, config.checkpoint(topology_of(config).counter_query))
    try:
        with RunningPipeline(spark, config) as run:
            for wave in range(WAVES):
                options = GenOptions(
                    keys=KEYS_PER_WAVE, seed=wave, missing_rate=0, key_prefix=f"W{wave}"
                )
                produce(config, build_dataset(config, options).records)
                fired = (wave + 1) * KEYS_PER_WAVE
                run.wait_for(lambda n=fired: run.metrics.get("counter.fired") >= n, 120, "a wave")
                fired_ms = _fired_ms(settings, config)
                # The batch that fired the wave's last keys: they are in its state by construction.
                last_fire = max(fired_ms.values())
                batches = committed_batches(files)
                firing = next(b for b in batches if _batch_time(files, b) == last_fire)
                assert _check(spark, config, firing, fired_ms) > 0
                # And the latest batch: whatever of the earlier waves outlived its TTL is gone.
                _check(spark, config, committed_batches(files)[-1], fired_ms)

            everything = _fired_ms(settings, config)
            expired = max(everything.values()) + retention_ms(TTL_SECONDS * 1000)

            def emptied() -> bool:
                latest = committed_batches(files)[-1]
                return _batch_time(files, latest) > expired and not _state_after(
                    spark, config, latest
                )

            # Every key fired before its state_ttl deadline and deleted its timer,
            # so no deadline is left; the counter runs a batch only when input
            # arrives (an idle transformWithState batch is a job over every state
            # partition); expired state leaves in the next batch. Once every
            # query read its input, the counter stays still while the last TTL
            # passes (at least IDLE_TRIGGERS triggers); then a record the
            # indexer rejects (no state of its own) brings that batch.
            stages = topology_of(config).inputs()
            run.wait_for(lambda: lag.behind(config, stages) == 0, 60, "every input read")
            run.wait_for(lambda: not _counter_busy(run), 60, "the counter's last batch to end")
            # Batches counted in the checkpoint's offset log: an idle query's progress
            # events (every 10 s) carry the next batch id without running it.
            before, since = planned_batches(files)[-1], time.monotonic()
            run.wait_for(
                lambda: (
                    time.time() * 1000 > expired and time.monotonic() - since > IDLE_TRIGGERS * 0.2
                ),
                60,
                "the last TTL to pass",
            )
            # A batch with input is no idle batch: a deadline's tick (a key slower than
            # its state_ttl on a loaded machine) may still be read after `before`.
            assert planned_batches(files)[-1] == before, "the idle counter ran micro-batches"
            produce(config, [_rejected_record(config)])
            run.wait_for(emptied, 60, "every fired key's state to expire")
        assert run.metrics.get("counter.fired") == WAVES * KEYS_PER_WAVE
        assert len(everything) == WAVES * KEYS_PER_WAVE
    finally:
        drop(config)
