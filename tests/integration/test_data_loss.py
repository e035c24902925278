"""Records deleted from a source topic before the pipeline read them are reported, not lost quietly.

As retention (or deleteRecords) does to a pipeline that was stopped too long:
the records after the committed offsets are deleted while it is stopped, then
it runs again. It goes on, and says so: a count per source and partition, an
alert on the status line, and a dead letter per partition with the offset range.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe.figures import Figures
from fusion.observe.names import DATA_LOSS_ALERT
from fusion.ops.prometheus import MetricsServer, PipelineCollector
from fusion.pipeline import status_line
from tests.integration.pipelines import (
    delete_to_end,
    drop,
    end_offsets,
    read_topic,
    run_pipeline,
    scrape,
    source_record,
    write_config_file,
)

BIN = Path(sys.executable).parent


def test_records_deleted_before_they_were_indexed_are_counted_alerted_and_dead_lettered(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config_file = write_config_file(settings, tmp_path / "pipeline.toml", ["a", "b"])
    config = PipelineConfig.load(config_file, env={})
    topic = config.topic_of(config.source("a"))
    try:
        kafka_topics.ensure_topics(config)
        produce(config, [source_record(config, s, f"K{n}", n=n) for n in range(10) for s in "ab"])
        run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") >= 10)
        read_up_to = end_offsets(settings, topic)

        # Stopped: 50 more records arrive on a, and are deleted before the pipeline reads them.
        produce(config, [source_record(config, "a", f"L{n}", n=n) for n in range(50)])
        ends = delete_to_end(settings, topic)
        deleted = {p: ends[p] - read_up_to[p] for p in ends if ends[p] > read_up_to[p]}
        assert sum(deleted.values()) == 50 and len(deleted) == 2, deleted  # both partitions
        # ...and a later key, which the pipeline still enriches.
        produce(config, [source_record(config, s, "LATER", n=1) for s in "ab"])

        metrics = run_pipeline(
            spark,
            config,
            done=lambda m: m.get("enricher.enriched") >= 1 and Figures(m.counts()).lost >= 50,
        )

        figures = Figures(metrics.counts())
        assert figures.source("a").lost == 50 and figures.source("b").lost == 0
        assert dict(figures.source("a").lost_by_partition) == deleted
        assert "lost 50" in " ".join(status_line(metrics).split())
        assert (
            "50 source records deleted before they were indexed"
            in metrics.alerts()[DATA_LOSS_ALERT]
        )
        # One dead letter per partition, naming its own count and offset range.
        letters = [d for _, d in read_topic(settings, config.dlq_topic)]
        assert all(d["stage"] == "indexer" and d["source"] == "a" for d in letters)
        assert all(d["reason"].startswith("records deleted before") for d in letters)
        by_partition = {d["partition"]: d["reason"] for d in letters}
        assert len(letters) == len(by_partition) and set(by_partition) == set(deleted)
        for partition, reason in by_partition.items():
            first, last, count = read_up_to[partition], ends[partition] - 1, deleted[partition]
            assert f"offsets {first} to {last} ({count}) of {topic}-{partition};" in reason

        # What an operator reads: `fusion status` from the markers in Kafka...
        shown = _status(settings, config_file)
        assert shown["sources"]["a"]["lost"] == 50 and shown["sources"]["b"]["lost"] == 0
        assert {int(p): n for p, n in shown["sources"]["a"]["lost_by_partition"].items()} == deleted
        # ...and Prometheus, from the endpoint `fusion run --metrics-port` serves.
        collector = PipelineCollector(config, ["single"], metrics, dict)
        with MetricsServer(collector, "127.0.0.1", 0) as server:
            samples = scrape(server.url)
        lost = {
            (dict(labels)["source"], int(dict(labels)["partition"])): value
            for (name, labels), value in samples.items()
            if name == "fusion_source_records_lost_total"
        }
        assert lost == {("a", partition): count for partition, count in deleted.items()}
    finally:
        drop(config)


def _status(settings: Settings, config_file: Path) -> dict[str, Any]:
    """`fusion status --no-state --json` as its own process."""
    done = subprocess.run(
        [BIN / "fusion", "--config", str(config_file), "status", "--no-state", "--json"],
        env=dict(os.environ, FUSION_HOME=str(settings.runtime.home)),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown
