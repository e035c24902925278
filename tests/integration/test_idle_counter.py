"""An idle counter costs nothing unless a deadline needs it.

In processing-time mode Spark runs a ``transformWithState`` micro-batch on
every trigger, acks or not, so that timers can fire; each one is a job over
every state partition. Fusion asks for those idle batches only when the
pipeline has a deadline (:func:`fusion.counter_query.runs_idle_batches`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fusion.config import PipelineConfig
from fusion.generator import GenOptions, build_dataset, produce
from fusion.settings import Settings
from tests.integration.pipelines import RunningPipeline, drop, make_config

TRIGGERS = 20  # trigger intervals (200 ms each in the tests) an idle counter is watched


def _counter_batch(run: RunningPipeline) -> int:
    (counter,) = [q for q in run.queries if q.name.endswith("-counter")]
    progress = counter.lastProgress
    return -1 if progress is None else int(progress["batchId"])


def _fire_some_keys(run: RunningPipeline, config: PipelineConfig) -> None:
    data = build_dataset(config, GenOptions(keys=20, seed=3, missing_rate=0))
    produce(config, data.records)
    run.wait_for(lambda: run.metrics.get("counter.fired") >= 20, 120, "20 keys to fire")
    # Their enrichment ends the input; the counter has nothing left to read.
    run.wait_for(lambda: run.metrics.get("enricher.enriched") >= 20, 120, "20 keys enriched")


def test_without_deadlines_an_idle_counter_runs_no_batches(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"])
    try:
        with RunningPipeline(spark, config) as run:
            _fire_some_keys(run, config)
            before = _counter_batch(run)
            time.sleep(TRIGGERS * 0.2)  # watching for something that must not happen
            assert _counter_batch(run) == before, "the idle counter ran micro-batches"
    finally:
        drop(config)


def test_with_a_deadline_the_idle_counter_keeps_running_batches(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"], timeout="1h")
    try:
        with RunningPipeline(spark, config) as run:
            _fire_some_keys(run, config)
            before = _counter_batch(run)
            run.wait_for(lambda: _counter_batch(run) >= before + 3, 60, "idle counter batches")
    finally:
        drop(config)
