"""The counter alone beside Spark counting the same acks alone (no servers)."""

from __future__ import annotations

from typing import Any

from fusion.bench.baselines import median_counter_run
from fusion.bench.jvm_baseline import fraction, rates
from fusion.bench.runs.burst_report import markdown


def test_the_baselines_first_batch_that_read_rows_is_the_cold_one() -> None:
    batches = [
        {"rows": 0, "ms": 900},  # the query's start, before any ack
        {"rows": 1000, "ms": 2000},
        {"rows": 600, "ms": 100},
        {"rows": 400, "ms": 100},
        {"rows": 0, "ms": 5},
    ]

    found = rates(batches)

    assert found["cold_first_batch"] == {"acks": 1000, "seconds": 2.0, "acks_per_second": 500}
    assert (found["acks"], found["seconds"], found["acks_per_second"]) == (1000, 0.2, 5000)


def test_a_baseline_that_read_nothing_has_no_rate_rather_than_a_division_by_zero() -> None:
    found = rates([{"rows": 0, "ms": 10}])

    assert found["acks_per_second"] == 0 and found["cold_first_batch"]["acks_per_second"] == 0
    assert fraction(_counter(100, 10), found) == {"warm": None, "cold": None}


def test_the_counter_is_a_fraction_of_the_baseline_warm_and_cold_apart() -> None:
    baseline = rates([{"rows": 1000, "ms": 1000}, {"rows": 1000, "ms": 250}])

    assert fraction(_counter(2000, 500), baseline) == {"warm": 0.5, "cold": 0.5}


def test_the_median_runs_fractions_are_each_the_median_of_the_runs_own() -> None:
    """Each run's fraction is of the baseline measured in that run; the medians go apart."""
    runs = [
        _counter(300, 10) | {"of_baseline": {"warm": 0.9, "cold": 0.2}},
        _counter(100, 10) | {"of_baseline": {"warm": 0.5, "cold": 0.4}},
        _counter(200, 10) | {"of_baseline": {"warm": 0.7, "cold": 0.1}},
    ]

    median = median_counter_run(runs)

    assert median["acks_per_second"] == 200 and median["runs"] == [300, 100, 200]
    assert median["of_baseline"]["warm"] == 0.7 and median["of_baseline"]["cold"] == 0.2


def test_the_report_shows_the_counter_beside_spark_alone() -> None:
    baseline = rates([{"rows": 1000, "ms": 1000}, {"rows": 1000, "ms": 50}])
    counter = _counter(5000, 400) | {"acks": 1000, "seconds": 0.2, "fired": 250}
    counter |= {"baseline": baseline, "runs": [5000, 4000, 6000]}
    counter["of_baseline"] = {"warm": 0.25, "cold": 0.4, "runs": [{"warm": 0.25}] * 3}
    report = _report() | {"counter_only": counter}

    text = markdown(report)

    assert "20,000 acks/s warm" in text and "warm **0.25** (each run: 0.25, 0.25, 0.25)" in text
    assert "cold 0.4" in text


def _counter(warm: int, cold: int) -> dict[str, Any]:
    return {"acks_per_second": warm, "cold_first_batch": {"acks_per_second": cold}}


def _report() -> dict[str, Any]:
    return {
        "keys": 10, "sources": 4, "seed": 1, "runs": 3, "rate": 0, "warm": 0,
        "max_offsets_per_trigger": 1, "spark_master": "local[2]", "date": "d", "commit": "c",
        "floor_seconds": 1.0, "modes": [],
        "machine": {"cores": 2, "pyspark": "4", "kafka": "4", "elasticsearch": "8", "python": "3"},
    }  # fmt: skip
