"""The idle benchmark's report."""

from __future__ import annotations

from fusion.bench.runs import idle


def test_the_report_names_each_scenario_and_the_deadlines_lateness() -> None:
    report = {
        "sources": 3,
        "commit": "abc1234",
        "window_seconds": 30,
        "scenarios": [
            {"trigger_interval": "0", "timeout": None, "cores": 0.031},
            {"trigger_interval": "default", "timeout": "30s", "cores": 0.052},
        ],
        "deadline": {"timeout_seconds": 5, "resolution_seconds": 1.0, "lateness_seconds": 0.84},
    }

    text = idle.markdown(report)

    assert "| 0 | - | 0.031 |" in text and "| default | 30s | 0.052 |" in text
    assert "came 0.84 s after its deadline (deadline_resolution 1 s)" in text
