"""`fusion reconcile` after the ack topic was deleted and recreated while keys were in flight."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from fusion import topology
from fusion.generator import produce
from fusion.reconcile import reconcile
from fusion.settings import Settings
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    make_config,
    read_topic,
    run_pipeline,
    source_record,
)


def test_reconcile_enriches_exactly_the_keys_whose_acks_were_lost(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"])

    def records(keys: list[str], sources: list[str]) -> list[tuple[str, str, bytes]]:
        return [source_record(config, s, k, n=1) for k in keys for s in sources]

    joined = [f"A{i}" for i in range(10)]  # enriched by the pipeline
    lost = [f"B{i}" for i in range(8)]  # indexed, then their acks are gone
    half = [f"C{i}" for i in range(3)]  # only billing: not complete anywhere
    try:
        produce(config, records(joined, ["billing", "insurance"]))
        run_pipeline(spark, config, lambda m: m.get("enricher.enriched") >= 10)
        produce(config, records(lost, ["billing", "insurance"]) + records(half, ["billing"]))
        run_pipeline(spark, config, lambda m: m.total(".indexed") >= 19, only="indexers")
        topology.delete_topics(config, [config.acks_topic])
        topology.ensure_topics(config)

        report = reconcile(config)
        again = reconcile(config)

        assert (report.scanned, report.complete, report.up_to_date) == (21, 18, 10)
        assert (report.planned, report.enriched, report.dead_letters) == (8, 8, 0)
        assert sorted(enriched_docs(settings, config)) == sorted(joined + lost)
        topic = [key or "" for key, _ in read_topic(settings, config.enriched_topic)]
        assert sorted(topic) == sorted(joined + lost)  # each key once
        assert (again.planned, again.enriched) == (0, 0)

        # A crash after the Kafka commit leaves plan.json behind: the resumed run
        # finds its batches committed and writes nothing twice.
        home = config.checkpoint_dir / "reconcile"
        shutil.copy(home / "last-plan.json", home / "plan.json")
        resumed = reconcile(config)
        assert resumed.resumed and (resumed.planned, resumed.enriched) == (8, 0)
        assert len(read_topic(settings, config.enriched_topic)) == len(joined + lost)
    finally:
        drop(config)
