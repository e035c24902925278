"""The counter's state stays bounded: fired keys leave it once their state TTL passes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fusion.generator import GenOptions, build_dataset, produce
from fusion.settings import Settings
from tests.integration.pipelines import RunningPipeline, drop, make_config

WAVES = 6
KEYS_PER_WAVE = 100


def test_state_stays_flat_over_a_long_stream_of_completed_keys(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"], state_ttl="3s")
    sizes: list[int] = []
    try:
        with RunningPipeline(spark, config) as run:
            counter = next(q for q in run.queries if q.name.endswith("-counter"))

            def state_rows() -> int:
                progress = counter.lastProgress
                return int(progress["stateOperators"][0]["numRowsTotal"]) if progress else -1

            for wave in range(WAVES):
                options = GenOptions(
                    keys=KEYS_PER_WAVE, seed=wave, missing_rate=0, key_prefix=f"W{wave}"
                )
                produce(config, build_dataset(config, options).records)
                done = (wave + 1) * KEYS_PER_WAVE
                run.wait_for(enriched_at_least(run, done), 120, f"wave {wave} enriched")
                sizes.append(state_rows())
            run.wait_for(lambda: state_rows() == 0, 60, "every fired key's state to expire")
        assert run.metrics.get("counter.fired") == WAVES * KEYS_PER_WAVE
        # Each wave adds 100 keys; without expiry the state would hold 600 at the end.
        assert max(sizes) <= 2 * KEYS_PER_WAVE, sizes
        assert sizes[-1] <= 2 * KEYS_PER_WAVE
    finally:
        drop(config)


def enriched_at_least(run: RunningPipeline, count: int) -> Callable[[], bool]:
    return lambda: run.metrics.get("enricher.enriched") >= count
