"""Which offsets a batch can no longer read: the log starts past where the last batch ended."""

from __future__ import annotations

from fusion.kafka.data_loss import Lost, counts, lost_ranges

STARTS = {("p.a", 0): 100, ("p.a", 1): 40, ("p.b", 0): 7}


def test_a_log_that_starts_past_the_batch_start_lost_the_records_in_between() -> None:
    ends = {("p.a", 0): 180, ("p.a", 1): 60, ("p.b", 0): 9}
    earliest = {("p.a", 0): 150, ("p.a", 1): 40, ("p.b", 0): 0}

    assert lost_ranges(STARTS, ends, earliest) == [Lost("p.a", 0, 100, 150)]


def test_a_log_deleted_past_the_batch_end_lost_the_whole_batch_range_only() -> None:
    ends = {("p.a", 0): 120, ("p.a", 1): 40, ("p.b", 0): 7}
    earliest = {("p.a", 0): 500, ("p.a", 1): 90, ("p.b", 0): 7}

    # p.a-1 has nothing new in the batch (end == start): what it loses shows in a later batch.
    assert lost_ranges(STARTS, ends, earliest) == [Lost("p.a", 0, 100, 120)]


def test_losses_count_per_source_and_partition() -> None:
    lost = [Lost("p.a", 0, 100, 150), Lost("p.a", 1, 40, 42)]

    assert counts(lost, {"p.a": "billing"}) == {
        "indexer.billing.lost": 52,
        "indexer.billing.lost@0": 50,
        "indexer.billing.lost@1": 2,
    }
