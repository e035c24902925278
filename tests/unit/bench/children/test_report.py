"""The children benchmark's medians and report: every figure beside its target (pure)."""

from __future__ import annotations

from typing import Any

from fusion.bench.children.records import orders_of
from fusion.bench.children.report import markdown, median_run
from fusion.bench.children.run import ChildrenOptions


def _run(burst: float, p99: float, lookups: float) -> dict[str, Any]:
    return {
        "floor_seconds": 4.0,
        "floor_orders_per_second": 2500.0,
        "burst": {"seconds": burst, "ratio_to_floor": burst / 4, "orders_per_second": 1e4 / burst,
                  "lookups_per_order": lookups},
        "big": {"seconds": 1.5, "reenrichments": 2},
        "steady": {"rate": 250.0, "latency_p50": 0.8, "latency_p99": p99,
                   "lookups_per_order": 0.5},
    }  # fmt: skip


def test_each_figure_is_the_median_of_the_runs_beside_its_target() -> None:
    runs = [_run(10.0, 2.0, 0.002), _run(14.0, 4.0, 0.003), _run(12.0, 2.5, 0.001)]
    median = median_run(runs)
    assert median["burst_seconds"] == 12.0 and median["steady_p99"] == 2.5
    assert median["burst_lookups_per_order"] == 0.002
    assert median["each"]["burst_seconds"] == [10.0, 14.0, 12.0]
    report = {
        "median": median, "options": vars(ChildrenOptions()), "machine": {"cores": 2},
        "commit": "abc1234", "date": "2026-11-28", "runs": runs,
    }  # fmt: skip
    text = markdown(report)
    assert "| burst: ratio to the floor | 3.00 (2.50, 3.50, 3.00) | 1 | ≤ 3: met |" in text
    assert "| ... latency p99 (s) | 2.50 (2.00, 4.00, 2.50) | | ≤ 3: met |" in text
    missed = markdown(report | {"median": median | {"burst_ratio_to_floor": 3.2}})
    assert "≤ 3: **missed**" in missed


def test_an_orders_lines_come_before_it() -> None:
    from fusion.bench.children.records import children_config
    from fusion.core import Settings

    config = children_config(Settings(), "t")
    records = orders_of(config, "B", 2, 3)
    topics = [topic for topic, _, _ in records]
    assert (
        topics
        == [config.topic_of(config.source("lines"))] * 6
        + [config.topic_of(config.source("orders"))] * 2
    )


def test_the_report_shows_where_the_cores_and_the_task_time_went() -> None:
    runs = [_run(10.0, 2.0, 0.002), _run(12.0, 2.5, 0.001)]
    runs[0]["burst"] |= {
        "cores": {"jvm": 0.4, "worker": 0.9, "machine": 1.9},
        "task_stages": {"index.write": 3.25, "enrich.build": 0.0},
    }
    runs[0]["steady"] |= {"cores": {"jvm": 0.7, "elasticsearch": 0.2, "machine": 1.5}}
    runs[1]["burst"] |= {"cores": {"jvm": 0.5, "machine": 1.8}, "task_stages": {}}
    runs[1]["steady"] |= {"cores": {"machine": 1.4}}  # fmt: skip
    report = {
        "median": median_run(runs), "options": vars(ChildrenOptions()), "machine": {"cores": 2},
        "commit": "abc1234", "date": "2026-11-28", "runs": runs,
    }  # fmt: skip
    text = markdown(report)
    assert "| run, step | Spark JVM | Python workers | Elasticsearch | machine |" in text
    assert "| 1, burst | 0.4 | 0.9 | - | 1.9 |" in text
    assert "| 2, steady | - | - | - | 1.4 |" in text
    # A stage no run spent time in is left out.
    assert "| index.write | 3.2 | 0.0 |" in text and "enrich.build" not in text


def test_a_report_without_cores_has_no_cores_table() -> None:
    runs = [_run(10.0, 2.0, 0.002)]
    report = {
        "median": median_run(runs), "options": vars(ChildrenOptions()), "machine": {"cores": 2},
        "commit": "abc1234", "date": "2026-11-28", "runs": runs,
    }  # fmt: skip
    assert "Cores busy" not in markdown(report)
