"""The status benchmark's report says where the aggregate ran."""

from __future__ import annotations

from typing import Any

from fusion.bench.runs.status import markdown

RUN = {
    "keys_in_state": 100,
    "pending_keys": 100,
    "status_seconds": 1.0,
    "driver_python_peak_mb": 150,
    "jvm_peak_mb": 400,
    "count_seconds": 2.0,
}


def report(master: str) -> dict[str, Any]:
    return {"commit": "abc1234", "spark_master": master, "runs": [RUN]}


def test_a_cluster_run_says_the_driver_jvm_ran_no_task() -> None:
    text = markdown(report("spark://127.0.0.1:7077"))
    assert "Spark master spark://127.0.0.1:7077" in text
    assert "local mode" not in text


def test_a_local_run_says_its_jvm_ran_the_aggregate() -> None:
    assert "local mode, so its JVM runs the aggregate" in markdown(report("local[8,4]"))
