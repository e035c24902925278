"""The burst report says what each part's CPU came to over the measured burst, a record."""

from __future__ import annotations

from fusion.bench.runs.burst_report import markdown
from tests.unit.bench.test_jvm_baseline import _report


def test_the_report_gives_each_parts_cpu_a_record_and_the_harnesss_own() -> None:
    mode = {
        "mode": "batched", "keys": 1000, "sources": 4, "es_requests": 3, "requests_per_key": 0.003,
        "wasted_requests": 0, "bulk_requests": 2, "docs_fetched": 4000, "wall_seconds": 2.0,
        "ratio_to_floor": 2.0, "keys_per_second": 500.0, "latency_p50": 1.0, "latency_p95": 1.5,
        "latency_p99": 1.9, "first_key_seconds": 0.8,
        "cpu_seconds": {"jvm": 2.0, "worker": 0.6, "bench": 0.2, "machine": 3.5},
    }  # fmt: skip

    text = markdown(_report() | {"modes": [mode]})

    assert "| 500.0 | 0.8 | 1.0 | 1.5 | 1.9 |" in text  # keys/s, the first key, p50, p95, p99
    # 4,000 records: 0.6 s of the Python workers is 150 µs a record.
    assert "Python workers 0.60 s (150 µs)" in text and "Spark JVM 2.00 s (500 µs)" in text
    assert "the benchmark (producer, timing) 0.20 s (50 µs)" in text and "machine 3.50 s" in text


def test_the_report_says_its_floor_was_measured_beside_the_generator_when_it_was() -> None:
    beside = markdown(_report() | {"modes": [], "floor_beside_generator": True})
    before = markdown(_report() | {"modes": []})

    assert "bulk-indexed from Python, beside the generator sending the records)" in beside
    assert "beside the generator" not in before
