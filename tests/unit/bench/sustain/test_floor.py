"""The sustained-load report measured against this machine's own floor (pure)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from fusion.bench.generator import GenOptions, build_dataset
from fusion.bench.setup import BenchOptions, bench_config
from fusion.bench.sustain import report as sustain_report
from fusion.bench.sustain.floor import Floor, as_rows, median_of_runs, with_fractions
from fusion.core.settings import Settings


def _step(rate: float, p50: float = 0.4, p99: float = 1.2, **more: Any) -> dict[str, Any]:
    return {"keys_per_second": rate, "sent_keys_per_second": rate, "keys": int(rate * 10),
            "enriched": int(rate * 10), "sustained": True, "kept_up": True, "why": "ok",
            "latency_p50": p50, "latency_p95": p99, "latency_p99": p99, "latency_max": p99,
            "requests_per_key": 0.1, "backlog_mean": 0, "backlog_rise": 0, "drain_seconds": 1,
            "hops": {}, "cdf": []} | more  # fmt: skip


def _report(floor: Floor, sustained: float, kept: float, p50: float) -> dict[str, Any]:
    best = _step(sustained)
    report = {
        "kind": "sustain", "sources": 4, "step_seconds": 60, "slo_seconds": 3.0,
        "date": "2026-11-27", "commit": "abc", "spark_master": "local[2]",
        "trigger_interval": "100 milliseconds", "refresh_interval": "200ms",
        "machine": {"cores": 2, "pyspark": "4", "kafka": "4", "elasticsearch": "8",
                    "python": "3.11"},
        "sustained": {k: best[k] for k in ("keys_per_second", "latency_p50", "latency_p99")},
        "kept_up": {"keys_per_second": kept, "latency_p50": 2.0, "latency_p99": 9.0},
        "search": [_step(sustained), _step(kept, sustained=False)],
        "at_fraction": [{"fraction": 1.0, **best}],
        "at_rates": [{"floor_fraction": 0.1, **_step(floor.before / 10, p50=p50)}],
    }  # fmt: skip
    return with_fractions(report, floor)


def test_every_rate_is_also_a_fraction_of_the_floor_measured_before_and_after() -> None:
    report = _report(Floor(before=2_400, after=2_000), sustained=440, kept=1_100, p50=1.4)

    assert report["floor"]["keys_per_second"] == 2_200
    assert report["floor"]["keys_per_second_before"] == 2_400
    assert report["floor"]["keys_per_second_after"] == 2_000
    assert report["floor"]["keys"] == 20_000
    assert report["sustained"]["fraction_of_floor"] == 0.2
    assert report["kept_up"]["fraction_of_floor"] == 0.5
    assert [s["fraction_of_floor"] for s in report["search"]] == [0.2, 0.5]
    assert report["at_rates"][0]["fraction_of_floor"] == round(240 / 2_200, 3)


@given(
    before=st.floats(min_value=10, max_value=10_000),
    after=st.floats(min_value=10, max_value=10_000),
    rate=st.floats(min_value=1, max_value=10_000),
)
# Shown as 4,238.9: 1,579 is 0.373 of it, 0.372 of the unrounded 4,238.93.
@example(before=4_238.93, after=4_238.93, rate=1_579.0)
def test_each_fraction_is_of_the_floor_as_the_report_shows_it(
    before: float, after: float, rate: float
) -> None:
    floor = Floor(before, after)
    report = _report(floor, sustained=rate, kept=rate, p50=1.0)
    shown = report["floor"]["keys_per_second"]

    # A reader divides a step's rate by the floor written beside it and gets its fraction.
    assert report["sustained"]["fraction_of_floor"] == round(rate / shown, 3)


def test_nothing_sustained_has_no_fraction() -> None:
    report = _report(Floor(2_000, 2_000), sustained=100, kept=200, p50=1.0) | {"sustained": None}

    assert with_fractions(report, Floor(2_000, 2_000))["sustained"] is None


def test_the_runs_headline_is_each_figures_median_over_runs_each_beside_its_own_floor() -> None:
    runs = [
        _report(Floor(2_000, 2_000), sustained=400, kept=1_000, p50=1.4),  # 0.2, 0.5
        _report(Floor(4_000, 4_000), sustained=1_200, kept=2_400, p50=0.9),  # 0.3, 0.6
        _report(Floor(1_000, 1_000), sustained=100, kept=900, p50=2.0),  # 0.1, 0.9
    ]

    median = median_of_runs(runs)

    assert median["runs"] == 3
    assert median["floor_keys_per_second"] == 2_000
    assert median["sustained_fraction"] == 0.2
    assert median["kept_up_fraction"] == 0.6
    assert median["sustained_keys_per_second"] == 400
    assert median["floor_step_p50"] == 1.4
    text = sustain_report.runs_markdown(sustain_report.of_runs(runs))
    assert "| median | 2,000 | 0.2 (400 keys/s) | 0.6 (1,000 keys/s) | 1.4 / 1.2 |" in text
    assert text.count("## Run ") == 3
    assert "0.20 of the floor, 400 keys/s" in text
    assert "10 % of the floor" in text and "| p50 / p99 s at 10 % of the floor |" in text


def test_a_report_names_the_pipeline_options_its_run_set() -> None:
    report = _report(Floor(2_000, 2_000), sustained=400, kept=1_000, p50=1.4)

    assert "Set for this run" not in sustain_report.markdown(report)
    lever = report | {"pipeline_set": {"layout": "stages", "refresh_interval": "100ms"}}
    assert "Set for this run: `layout = stages`, `refresh_interval = 100ms`" in (
        sustain_report.markdown(lever)
    )


def test_the_floor_indexes_the_rows_whatever_the_sources_format() -> None:
    options = BenchOptions(1, 4, format="debezium")
    events = bench_config(Settings(), "batched", options, "t")
    rows = as_rows(events)

    assert {s.format for s in rows.sources} == {"json"}
    assert [rows.topic_of(s) for s in rows.sources] == [events.topic_of(s) for s in events.sources]
    gen = GenOptions(keys=3, duplicate_rate=0, missing_rate=0)
    assert all("after" in json.loads(v) for _, _, v in build_dataset(events, gen).records)
    for _, _, value in build_dataset(rows, gen).records:
        assert set(json.loads(value)) >= {"txn_id"} and "after" not in json.loads(value)
