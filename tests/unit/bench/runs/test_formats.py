"""The formats benchmark's report: medians of the runs, each beside its floor, and the costs."""

from __future__ import annotations

from typing import Any

from fusion.bench.runs.formats import _median_sustained, _sustained, markdown


def _search(sustained: float | None, kept_up: float) -> dict[str, Any]:
    best = None if sustained is None else {"keys_per_second": sustained, "latency_p99": 2.5}
    return {"sustained": best, "kept_up": {"keys_per_second": kept_up}}


def _burst(rate: float) -> dict[str, Any]:
    return {
        "wall_seconds": 20_000 / rate, "keys_per_second": rate, "floor_keys_per_second": 1_250,
        "fraction_of_floor": rate / 1_250, "fractions": [rate / 1_250], "latency_p99": 20.0,
    }  # fmt: skip


def test_each_figure_is_the_median_of_the_runs_and_a_fraction_of_its_floor() -> None:
    runs = [
        _sustained(_search(88, 1_000), 1_250),  # a first search that met the bursts' merges
        _sustained(_search(400, 1_600), 1_000),
        _sustained(_search(300, 1_200), 1_200),
    ]
    assert runs[1]["kept_up_fraction"] == 1.6
    median = _median_sustained(runs)
    assert median["sustained_keys_per_second"] == 300
    assert median["kept_up_keys_per_second"] == 1_200
    assert median["kept_up_fraction"] == 1.0  # the median of 0.8, 1.6, 1.0
    assert len(median["runs"]) == 3
    assert _median_sustained([_sustained(_search(None, 50), 1_000)])["sustained_fraction"] is None


def test_the_report_says_what_the_envelope_costs_of_each_rate() -> None:
    sustained = {
        "json": _median_sustained([_sustained(_search(500, 1_000), 1_250)]),
        "debezium": _median_sustained([_sustained(_search(400, 900), 1_250)]),
    }
    report = {
        "sources": 4, "machine": {"cores": 2}, "commit": "abc", "date": "d", "keys": 20_000,
        "runs": 1, "burst": {"json": _burst(640), "debezium": _burst(600)},
        "sustained": sustained,
    }  # fmt: skip
    text = markdown(report)
    assert "Reading the envelope costs 6.2 % of the burst." in text
    assert "costs 20.0 % of the sustained rate within the p99 objective" in text
    assert "costs 10.0 % of the highest rate kept up with" in text
    assert "| json | 500 (0.40) | 2.50 | 1,000 (0.80) | 0.80 |" in text


def test_with_a_registry_avro_is_measured_and_costed_beside_json() -> None:
    from fusion.bench.runs.formats import formats_of
    from fusion.core.settings import Settings

    assert formats_of(Settings()) == ("json", "debezium")
    registry = Settings.load(env={"FUSION_REGISTRY_URL": "http://r:8081/apis/ccompat/v7"})
    assert formats_of(registry) == ("json", "debezium", "avro")
    sustained = {
        fmt: _median_sustained([_sustained(_search(rate, 1_000), 1_250)])
        for fmt, rate in (("json", 500), ("debezium", 400), ("avro", 450))
    }
    report = {
        "sources": 4, "machine": {"cores": 2}, "commit": "abc", "date": "d", "keys": 20_000,
        "runs": 1, "formats": ["json", "debezium", "avro"],
        "burst": {"json": _burst(640), "debezium": _burst(600), "avro": _burst(576)},
        "sustained": sustained,
    }  # fmt: skip

    text = markdown(report)

    assert text.startswith("debezium and avro against plain JSON rows")
    assert "Reading Avro costs 10.0 % of the burst." in text
    assert "Reading Avro costs 10.0 % of the sustained rate within the p99 objective" in text
    assert "| avro | 450 (0.36) |" in text
