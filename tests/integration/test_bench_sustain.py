"""`fusion bench --sustain` end to end, at rates any machine keeps up with, in short steps."""

from __future__ import annotations

import json
from pathlib import Path

from fusion.bench import sustain as bench_sustain
from fusion.bench import sustain_report
from fusion.bench.sustain import SustainOptions
from fusion.core.settings import Settings


def test_the_sustain_benchmark_finds_a_rate_and_reports_its_latency(
    settings: Settings, tmp_path: Path
) -> None:
    options = SustainOptions(sources=3, step_seconds=4, start_rate=15, max_rate=30, refine=0)

    report = bench_sustain.run_sustain(settings, options)

    rates = [s["keys_per_second"] for s in report["search"]]
    assert rates == [15, 30]
    for step in report["search"] + report["at_fraction"]:
        # Every key of every step was enriched and measured; none waited less than nothing.
        assert step["enriched"] == step["keys"] > 0, step
        assert 0 < step["latency_p50"] <= step["latency_p99"] <= step["latency_max"], step
        # Batched lookups: fewer requests than keys even at these low rates (one _mget a batch).
        assert 0 < step["requests_per_key"] < 1, step
        # The producer kept the rate it was asked for (within 10 %).
        assert abs(step["sent_keys_per_second"] / step["keys_per_second"] - 1) < 0.1, step
    assert [s["fraction"] for s in report["at_fraction"]] == [0.25, 0.5, 1.0]
    assert [s["keys_per_second"] for s in report["at_fraction"]] == [7.5, 15, 30]
    best = report["at_fraction"][-1]
    assert report["sustained"] == {
        "keys_per_second": 30,
        "latency_p50": best["latency_p50"],
        "latency_p95": best["latency_p95"],
        "latency_p99": best["latency_p99"],
        "requests_per_key": best["requests_per_key"],
    }

    paths = sustain_report.write_report(report, tmp_path)

    assert json.loads(paths[0].read_text())["sustained"]["keys_per_second"] == 30
    assert "Highest sustained rate: 30 keys/s" in paths[1].read_text()
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
