"""`fusion bench sustain` end to end, at rates any machine keeps up with, in short steps.

The objective is loose on purpose: this checks the benchmark's mechanics
(steps, search, hops, report), not this machine's latency.
"""

from __future__ import annotations

import json
from pathlib import Path

from fusion.bench.sustain import report as sustain_report
from fusion.bench.sustain import run as bench_sustain
from fusion.bench.sustain.options import SustainOptions
from fusion.core.settings import Settings

HOPS = ("index", "count", "enrich")


def test_the_sustain_benchmark_finds_a_rate_and_reports_its_latency(
    settings: Settings, tmp_path: Path
) -> None:
    options = SustainOptions(
        sources=3,
        step_seconds=4,
        start_rate=15,
        max_rate=30,
        refine=0,
        slo=60.0,
        at_rates=(10.0,),
        at_floor=(0.005,),
        warmup_seconds=4,
        floor_keys=400,
    )

    report = bench_sustain.run_sustain(settings, options)

    rates = [s["keys_per_second"] for s in report["search"]]
    assert rates == [15, 30]
    steps = report["search"] + report["at_fraction"] + report["at_rates"]
    for step in steps:
        # Every key of every step was enriched and measured; none waited less than nothing.
        assert step["enriched"] == step["keys"] > 0, step
        assert step["kept_up"] and step["sustained"], step
        assert 0 < step["latency_p50"] <= step["latency_p99"] <= step["latency_max"], step
        # Each hop measured from the records' Kafka timestamps (how long: the benchmark's).
        for hop in HOPS:
            p50, p99 = step["hops"][hop]["p50"], step["hops"][hop]["p99"]
            assert p50 is not None and 0 <= p50 <= p99, (hop, step)
        # Batched lookups: one _mget a batch, so fewer requests than keys even at 7.5 keys/s
        # and up. The step at a share of the floor can be slower than a key a batch (1.2
        # keys/s on one CI machine): one request per key at most there.
        per_key = step["requests_per_key"]
        batched = step.get("floor_fraction") is None
        assert per_key > 0 and (per_key < 1 if batched else per_key <= 1), step
        # The producer sent every key of the step (at what rate: the benchmark reports it).
        assert step["sent_keys_per_second"] > 0, step
        # Where its batches' time went: the tasks' stages, per batch (the bulk writes at least).
        assert step["stages"]["index.write"] > 0 and step["stages"]["enrich.write"] > 0, step
    assert [s["fraction"] for s in report["at_fraction"]] == [0.25, 0.5, 1.0]
    assert [s["keys_per_second"] for s in report["at_fraction"]] == [7.5, 15, 30]
    # Spark's own phases of the batches that read rows, per query, over the whole run.
    assert any(
        p["batches"] > 0 and p.get("addBatch", 0) > 0 for p in report["spark_phases"].values()
    )
    floor = report["floor"]
    assert floor["keys"] == 400 and floor["keys_per_second_before"] > 0
    assert floor["keys_per_second_after"] > 0
    # The mean of the two (each shown rounded to 0.1, the mean rounded from the unrounded two).
    mean = (floor["keys_per_second_before"] + floor["keys_per_second_after"]) / 2
    assert abs(floor["keys_per_second"] - mean) <= 0.1
    # The fixed step, then the one at a share of the floor measured before the pipeline.
    assert [s["floor_fraction"] for s in report["at_rates"]] == [None, 0.005]
    assert report["at_rates"][0]["keys_per_second"] == 10.0
    at_floor = report["at_rates"][1]["keys_per_second"]
    assert at_floor == round(floor["keys_per_second_before"] * 0.005, 1)
    for step in steps:
        assert step["fraction_of_floor"] == round(
            step["keys_per_second"] / floor["keys_per_second"], 3
        )
    best = report["at_fraction"][-1]
    assert report["sustained"] == {
        "keys_per_second": 30,
        "latency_p50": best["latency_p50"],
        "latency_p95": best["latency_p95"],
        "latency_p99": best["latency_p99"],
        "requests_per_key": best["requests_per_key"],
        "hops": best["hops"],
        "fraction_of_floor": best["fraction_of_floor"],
    }
    assert report["kept_up"] == report["sustained"]
    assert report["slo_seconds"] == 60.0

    paths = sustain_report.write_report(report, tmp_path)

    assert json.loads(paths[0].read_text())["sustained"]["keys_per_second"] == 30
    markdown = paths[1].read_text()
    share = report["sustained"]["fraction_of_floor"]
    assert f"Highest sustained rate (p99 <= 60 s): {share:.2f} of the floor, 30 keys/s" in markdown
    assert "The floor (this machine bulk-indexing each key's 4 documents" in markdown
    assert "Where a batch's time goes" in markdown and "batches that read rows" in markdown
    assert all(hop in markdown for hop in HOPS)
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
