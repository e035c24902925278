"""The deadline clock's schedule: when a tick is needed, and when a batch settled a deadline."""

from __future__ import annotations

from fusion.counter import clock
from fusion.counter.clock import Schedule


def test_deadlines_round_up_to_their_bucket() -> None:
    assert clock.bucket_of(1_000, 1_000) == 1_000
    assert clock.bucket_of(1_001, 1_000) == 2_000
    assert clock.bucket_of(1_999, 500) == 2_000


def test_the_clock_counts_leave_the_counts_a_batch_commits() -> None:
    counts = {"counter.fired": 3, "clock.5000": 2, "clock.6000": 1}

    plain, buckets = clock.split_counts(counts)

    assert plain == {"counter.fired": 3}
    assert buckets == {5_000: 2, 6_000: 1}


def test_a_tick_is_due_only_once_a_bucket_passed_with_no_batch_since() -> None:
    schedule = Schedule()
    schedule.add({5_000: 2, 9_000: 1})

    assert not schedule.tick_due(4_999)
    assert schedule.tick_due(5_000)
    schedule.batch_ran(5_010)  # the batch the tick made fired those timers
    assert schedule.next_due() == 9_000
    assert not schedule.tick_due(8_000)
    assert schedule.tick_due(9_500)


def test_a_batch_that_runs_anyway_settles_the_buckets_before_it() -> None:
    schedule = Schedule()
    schedule.add({5_000: 1, 6_000: 1, 7_000: 1})

    schedule.batch_ran(6_500)  # acks kept coming: no tick was needed

    assert schedule.buckets == {7_000: 1}


def test_a_deadline_reported_late_by_a_batch_past_it_needs_no_tick() -> None:
    schedule = Schedule()
    schedule.batch_ran(10_000)

    schedule.add({9_000: 1})  # a replayed batch's deadline, already behind the newest batch

    assert schedule.next_due() is None


def test_a_bucket_whose_keys_all_fired_early_needs_no_tick() -> None:
    schedule = Schedule()
    schedule.add({5_000: 2, 9_000: 1})

    schedule.add({5_000: -1})  # one key of the bucket fired before its deadline
    assert schedule.buckets == {5_000: 1, 9_000: 1}
    schedule.add({5_000: -1, 9_000: -1})  # and the others

    assert schedule.next_due() is None
    assert not schedule.tick_due(10_000)
