"""Every key that enters the counter ends fired or incomplete: none leaves the state unreported.

With no ``timeout``, a required source is waited for ``state_ttl``; then the
key is reported incomplete with reason ``state_ttl``, before Spark's state TTL
(a margin longer) drops it. One pipeline (billing and insurance, both
required, ``state_ttl = "20s"``, no timeout) runs twice:

1. W1 gets both sources (it warms the pipeline up), then G1 gets billing; the
   pipeline stops before G1's deadline and stays stopped until Spark's TTL for
   G1's state has passed;
2. on restart the run says the stop outlived the state (with the way out,
   ``fusion reconcile``) and G1's timer finds no state: G1 is still reported
   incomplete, its sources unknown; meanwhile N1 gets billing only (reported
   at its ``state_ttl`` from what it had), C1 both sources (fired).
"""

from __future__ import annotations

import time
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.counter.decisions import retention_ms
from fusion.counter.state import state_of_key
from fusion.observe.names import STATE_OUTLIVED_ALERT
from fusion.spark.checkpoint import CheckpointFiles, batch_offsets, planned_batches
from fusion.topology import topology_of
from tests.integration.pipelines import (
    RunningPipeline,
    drop,
    make_config,
    read_topic,
    source_record,
)

TTL_SECONDS = 20
TTL_MS = TTL_SECONDS * 1000


def test_a_key_that_never_completes_is_reported_incomplete_at_its_state_ttl(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"], state_ttl=f"{TTL_SECONDS}s")
    try:
        with RunningPipeline(spark, config) as run:
            assert STATE_OUTLIVED_ALERT not in run.metrics.alerts()  # a fresh checkpoint
            # A key's deadline counts from its batch's start; a cold first batch (seconds)
            # would eat into the time G1 leaves to stop the pipeline before its deadline.
            produce(
                config,
                [source_record(config, s, "W1", amount=0) for s in ("billing", "insurance")],
            )
            run.wait_for(lambda: run.metrics.get("counter.fired") >= 1, 120, "W1 fired")
            produce(config, [source_record(config, "billing", "G1", amount=1)])
            # The metric counts the batch before Spark commits it; a stop in between
            # would leave G1 uncommitted (replayed on restart), so wait for the commit.
            run.wait_for(lambda: run.metrics.get("counter.keys") >= 1, 60, "G1 counted")
            run.wait_for(partial(_has_state, spark, config, "G1"), 30, "G1's state committed")
        found = state_of_key(spark, config, "G1")
        assert found is not None, "G1's state was committed"
        state, spark_expiry_ms = found
        assert state.expired_at is None, "stopped before G1's deadline: the test's premise"
        assert spark_expiry_ms == state.started_ms + retention_ms(TTL_MS)

        # Stopped until Spark's TTL for G1's state, and for anything the last batch
        # changed, has passed (a clock condition, not a guess).
        until_ms = max(spark_expiry_ms, _last_batch_ms(spark, config) + retention_ms(TTL_MS))
        while time.time() * 1000 <= until_ms + 500:
            time.sleep(0.2)

        with RunningPipeline(spark, config) as run:
            assert "`fusion reconcile`" in run.metrics.alerts()[STATE_OUTLIVED_ALERT]
            produce(
                config,
                [
                    source_record(config, "billing", "N1", amount=2),
                    source_record(config, "billing", "C1", amount=3),
                    source_record(config, "insurance", "C1", amount=3),
                ],
            )
            run.wait_for(
                lambda: run.metrics.get("counter.incomplete") >= 2,
                TTL_SECONDS + 60,
                "G1 and N1 reported incomplete",
            )
            started_n1 = state_of_key(spark, config, "N1")
        incomplete = {key: event for key, event in read_topic(settings, config.incomplete_topic)}
        ready = [key for key, _ in read_topic(settings, config.ready_topic)]
    finally:
        drop(config)

    assert sorted(ready) == ["C1", "W1"]
    assert sorted(incomplete) == ["G1", "N1"]
    n1, g1 = incomplete["N1"], incomplete["G1"]
    assert (n1["reason"], n1["present"], n1["missing"]) == ("state_ttl", ["billing"], ["insurance"])
    assert started_n1 is not None
    waited = datetime.fromisoformat(n1["expired_at"]).timestamp() - started_n1[0].started_ms / 1000
    assert TTL_SECONDS - 1 <= waited <= TTL_SECONDS + 30, waited  # not before its state_ttl
    # G1's state was gone when its timer fired: reported all the same, what it had unknown.
    assert (g1["reason"], g1["present"], g1["first_ack_at"]) == ("state_ttl", [], None)
    assert g1["missing"] == ["billing", "insurance"]


def _has_state(spark: Any, config: PipelineConfig, key: str) -> bool:
    return state_of_key(spark, config, key) is not None


def _last_batch_ms(spark: Any, config: PipelineConfig) -> int:
    files = CheckpointFiles(spark, config.checkpoint(topology_of(config).counter_query))
    found = batch_offsets(files, planned_batches(files)[-1])
    assert found is not None
    return found[0]
