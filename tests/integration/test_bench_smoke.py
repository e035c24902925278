"""A tiny benchmark of every mode, so the benchmark cannot silently rot. Counts only, no timings."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fusion import bench
from fusion.settings import Settings

KEYS, SOURCES = 25, 3


def test_request_counts_follow_the_design(spark: Any, settings: Settings, tmp_path: Path) -> None:
    report = bench.run_bench(settings, spark, bench.BenchOptions(KEYS, SOURCES))

    modes = {m["mode"]: m for m in report["modes"]}
    assert modes["naive"]["es_requests"] == KEYS * SOURCES * (SOURCES - 1)
    assert modes["naive"]["wasted_requests"] == KEYS * (SOURCES - 1) ** 2
    assert modes["counted"]["es_requests"] == KEYS * SOURCES
    assert modes["counted"]["wasted_requests"] == 0
    batched = modes["batched"]
    chunks_per_batch = math.ceil(KEYS * SOURCES / 1000)
    assert 1 <= batched["es_requests"] <= batched["counters"]["enricher.batches"] * chunks_per_batch
    for mode in modes.values():
        assert mode["keys"] == KEYS and mode["docs_fetched"] >= KEYS * SOURCES - KEYS
        assert mode["wall_seconds"] > 0 and mode["ratio_to_floor"] > 0
        assert mode["latency_p50"] <= mode["latency_p99"]
    assert report["floor_seconds"] > 0
    assert report["counter_only"]["acks"] == KEYS * SOURCES
    assert report["counter_only"]["fired"] == KEYS

    paths = bench.write_report(report, tmp_path)

    assert json.loads(paths[0].read_text())["keys"] == KEYS
    assert "| naive | 150 |" in paths[1].read_text()
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
