"""A stop longer than the counter keeps keys is said at start, with the way out."""

from __future__ import annotations

from fusion.counter.checkpoint_age import outlived_line
from fusion.counter.decisions import retention_ms

TTL_MS = 120_000  # 2 min: Spark keeps a key 4 min after its last change


def test_a_stop_within_the_margin_says_nothing() -> None:
    kept = retention_ms(TTL_MS)
    assert outlived_line(1_000, replayed=True, now_ms=1_000 + kept, state_ttl_ms=TTL_MS) is None


def test_a_longer_stop_names_both_durations_and_reconcile() -> None:
    line = outlived_line(0, replayed=False, now_ms=6 * 60_000, state_ttl_ms=TTL_MS)
    assert line is not None
    assert "6.0 min ago" in line and "4.0 min" in line
    assert "`fusion reconcile`" in line
    assert "replayed" not in line


def test_a_replayed_batch_is_said_to_lose_what_it_counts() -> None:
    line = outlived_line(0, replayed=True, now_ms=6 * 60_000, state_ttl_ms=TTL_MS)
    assert line is not None and "the batch replayed now counts" in line
