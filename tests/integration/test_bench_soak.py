"""`fusion bench soak` end to end, in a minute: its mechanics, not this machine's figures.

The pipeline is fed at a rate any machine keeps up with, killed with SIGKILL
once half way, and restarted; the hour-long soak's figures are in
bench/reference (docs/benchmark.md).
"""

from __future__ import annotations

from pathlib import Path

from fusion.bench.soak import report as soak_report
from fusion.bench.soak import run as soak
from fusion.core.settings import Settings


def test_a_short_soak_kills_restarts_and_reports_nothing_lost_nothing_twice(
    settings: Settings, tmp_path: Path
) -> None:
    options = soak.SoakOptions(
        minutes=1.0,
        window_minutes=0.5,
        kill_every_minutes=0.5,
        es_restart_minute=None,
        rate=15.0,
        sources=3,
        drain_seconds=240.0,
        # Spark keeps a key state_ttl and as long again after the batch that changed it, and
        # a batch replayed after the kill keeps its old timestamp: on a loaded machine the
        # restart took longer than the soak's 2 min x 2 (fusion.counter.checkpoint_age). A minute's
        # soak checks the mechanics, not that limit.
        state_ttl="10m",
    )

    report = soak.run_soak(settings, options)

    assert report["keys_sent"] == 15 * 60
    lost = (report["keys_lost"], report["lost_reported_incomplete"], report["drain_seconds"])
    assert report["keys_lost"] == 0 and report["duplicate_fires"] == 0, lost
    assert len(report["kills"]) == 1 and report["es_restart"] == "not planned"
    # By the window each enriched record was written in: the input's two, then the keys
    # enriched after it stopped in windows of their own; every key in exactly one.
    during = [w["start_minute"] for w in report["windows"] if not w["after_input"]]
    assert during == [0, 0.5]
    assert all(w["start_minute"] >= 1.0 for w in report["windows"] if w["after_input"])
    assert sum(w["keys"] for w in report["windows"]) == report["keys_enriched"]
    # A window can hold no key on a loaded machine (the restart after the kill outlasting it, or
    # a gap between the drain's last keys); one that holds keys has their p99, one without none.
    assert any(w["keys"] for w in report["windows"] if not w["after_input"])
    assert all((w["latency_p99_seconds"] is None) == (not w["keys"]) for w in report["windows"])
    samples = report["samples"]
    assert samples and all(s["pipeline_rss_mb"] > 0 for s in samples)
    assert max(s["state_keys"] for s in samples) > 0, "the counter's state was never read"
    assert set(report["flatness"]) == set(soak_report.SERIES)
    json_path, md_path = soak_report.write_report(report, tmp_path)
    text = md_path.read_text()
    assert json_path.exists() and "**fired twice 0**" in text
    assert "lost keys reported incomplete: none" in text
