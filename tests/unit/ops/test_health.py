"""The health probe's reading of Elasticsearch's rejections (pure)."""

from __future__ import annotations

from fusion.ops.health import BackPressure


def test_the_alert_needs_new_rejections_and_clears_after_quiet_probes() -> None:
    pressure = BackPressure(2.0)
    assert pressure.observe(100) == (0, None)  # the first reading: a baseline, no news
    new, line = pressure.observe(130)
    assert new == 30 and line is not None and "30 in the last 2 s" in line
    assert pressure.observe(130) == (0, None) and not pressure.quiet
    assert pressure.observe(130) == (0, None) and pressure.quiet
    assert pressure.observe(5) == (0, None)  # a node restarted: its counters begin again
    assert pressure.observe(9)[0] == 4
