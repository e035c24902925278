"""The soak's windows, trends and verdicts (pure)."""

from __future__ import annotations

import pytest

from fusion.bench.soak.report import (
    FLAT_SHARE,
    Sample,
    flatness,
    markdown,
    slope_per_hour,
    windows,
)


def _sample(at: float, rss: float) -> Sample:
    return Sample(at, pipeline_rss_mb=rss, servers_rss_mb=2_000, state_keys=500, lag_records=3)


def test_windows_take_the_keys_enriched_in_them_and_average_the_samples() -> None:
    samples = [_sample(10, 1_000), _sample(50, 1_100), _sample(70, 1_200)]
    latencies = [(5.0, 1.0), (30.0, 2.0), (59.9, 9.0), (61.0, 0.5)]
    rows = windows(samples, latencies, window=60, duration=120)
    assert [row["start_minute"] for row in rows] == [0, 1]
    assert rows[0]["keys"] == 2 and rows[0]["latency_p99_seconds"] == 2.0
    assert rows[0]["pipeline_rss_mb"] == 1_050 and rows[1]["pipeline_rss_mb"] == 1_200
    assert rows[1]["keys"] == 2 and rows[1]["latency_p99_seconds"] == 9.0
    assert rows[0]["sent_p99_seconds"] == 9.0 and rows[1]["sent_p99_seconds"] == 0.5


def test_keys_in_flight_at_the_next_windows_kill_count_in_the_kills_window() -> None:
    # Steady 1 s latency; a kill at 120 s holds the keys sent in 119-120 s until 150 s.
    latencies = [(at / 10, 30.0 if 1190 <= at < 1200 else 1.0) for at in range(1, 1800)]
    rows = windows([], latencies, window=60, duration=180, disturbances=[120.0])
    assert rows[1]["disturbed"] == 0.0 and rows[1]["latency_p99_seconds"] == 1.0
    assert rows[1]["sent_p99_seconds"] == 30.0  # the send window would blame the quiet one
    assert rows[2]["disturbed"] == 1.0 and rows[2]["latency_p99_seconds"] == 30.0


def test_keys_enriched_after_the_input_have_a_window_held_to_nothing() -> None:
    latencies = [(50.0, 1.0), (119.0, 20.0)]
    samples = [_sample(30, 1_000), _sample(90, 1_000), _sample(130, 9_000)]
    rows = windows(samples, latencies, window=60, duration=120)
    assert [row["after_input"] for row in rows] == [0.0, 0.0, 1.0] and rows[2]["keys"] == 1
    assert flatness(rows)["pipeline_rss_mb"]["slope_per_hour"] == 0.0


def test_a_window_nothing_was_enriched_in_says_so_and_the_next_still_counts() -> None:
    # The restart after a kill outlasting a window, then its backlog in the next.
    latencies = [(10.0, 1.0), (70.0, 75.0)]

    rows = windows([], latencies, window=60, duration=120)

    assert [(r["keys"], r["latency_p99_seconds"]) for r in rows] == [(1, 1.0), (0, None), (1, 75.0)]


def test_the_slope_is_per_hour_and_zero_for_a_level_series() -> None:
    assert slope_per_hour([(0, 5.0), (5, 5.0), (10, 5.0)]) == 0
    assert slope_per_hour([(0, 0.0), (30, 10.0), (60, 20.0)]) == pytest.approx(20.0)
    assert slope_per_hour([(5, 1.0)]) == 0


def test_a_leak_is_not_flat_a_level_with_kills_is() -> None:
    level = [
        {"start_minute": m, "pipeline_rss_mb": 1_000 + (40 if m % 10 else 0)}
        for m in range(0, 60, 5)
    ]
    leak = [{"start_minute": m, "pipeline_rss_mb": 1_000 + 10 * m} for m in range(0, 60, 5)]
    assert flatness(level)["pipeline_rss_mb"]["flat"]
    verdict = flatness(leak)["pipeline_rss_mb"]
    assert not verdict["flat"] and verdict["slope_per_hour"] == pytest.approx(600)
    assert verdict["bound_per_hour"] == pytest.approx(FLAT_SHARE * verdict["mean"])


def test_the_first_window_is_left_out() -> None:
    warming = [{"start_minute": 0, "state_keys": 0.0}] + [
        {"start_minute": m, "state_keys": 50_000.0} for m in range(5, 60, 5)
    ]
    assert flatness(warming)["state_keys"] == {
        "mean": 50_000.0,
        "slope_per_hour": 0.0,
        "bound_per_hour": 5_000.0,
        "flat": True,
    }


def test_the_report_says_what_ran_and_each_verdict() -> None:
    rows = [{"start_minute": 0, "keys": 10.0, "latency_p99_seconds": 1.0}]
    report = {
        "options": {"minutes": 60, "sources": 4, "state_ttl": "2m", "kill_every_minutes": 10},
        "rate": 400.0,
        "rate_reason": "given",
        "commit": "abc1234",
        "date": "2026-11-26",
        "machine": {"cores": 2},
        "kills": [10.0, 20.0],
        "es_restart": "stopped and started again at 25.0 min",
        "keys_sent": 100,
        "keys_enriched": 100,
        "keys_lost": 0,
        "duplicate_fires": 0,
        "drain_seconds": 12.0,
        "windows": rows,
        "flatness": flatness(rows),
    }
    text = markdown(report)
    assert "**lost 0**" in text and "**fired twice 0**" in text and "(2 kills)" in text
    assert "| latency_p99_seconds |" in text and "| 0 | 10 | 1.00 |" in text


def test_latency_and_lag_are_held_to_flat_over_the_windows_without_a_kill() -> None:
    rows = windows(
        [_sample(at, 1_000) for at in range(10, 600, 10)],
        # (sent, latency) of keys enriched each second; the kill's window waits 30 s.
        [(at - 30.0, 30.0) if 300 <= at < 360 else (at - 1.0, 1.0) for at in range(1, 600)],
        window=60,
        duration=600,
        disturbances=[310.0],
    )
    assert [row["disturbed"] for row in rows].count(1.0) == 1 and rows[5]["disturbed"]
    verdict = flatness(rows)["latency_p99_seconds"]
    assert verdict["flat"] and verdict["mean"] == 1.0  # the kill's window is its own story
    assert "| 5* |" in markdown(
        {
            "options": {"minutes": 10, "sources": 2, "state_ttl": "2m", "kill_every_minutes": 5},
            "rate": 1.0,
            "rate_reason": "given",
            "commit": "c",
            "date": "d",
            "machine": {},
            "kills": [5.1],
            "es_restart": "not planned",
            "keys_sent": 1,
            "keys_enriched": 1,
            "keys_lost": 0,
            "duplicate_fires": 0,
            "drain_seconds": 1.0,
            "windows": rows,
            "flatness": flatness(rows),
        }
    )
