"""A task's output waits for its transaction in ``fusion.output.Spool``: memory, then disk."""

from __future__ import annotations

import os
from typing import Any


def _records(spool: Any) -> list[tuple[str, bytes | None, bytes | None]]:
    out = []
    iterator = spool.iterator()
    while iterator.hasNext():
        record = iterator.next()
        out.append((record.topic(), record.key(), record.value()))
    return out


def test_output_beyond_the_budget_goes_to_disk_and_comes_back_whole_on_every_pass(
    fusion_jvm: Any,
) -> None:
    spool = fusion_jvm.fusion.output.Spool(1000)
    sent = [("t", f"k{i}".encode(), bytes([i % 256]) * 90) for i in range(50)]
    sent += [("other", None, b"x" * 5000), ("t", b"null value", None)]
    for topic, key, value in sent:
        spool.add(topic, key, value)

    assert spool.heldBytes() <= 1000
    assert spool.spilled() == spool.size() - 10 > 0  # 10 records of 93 bytes fit in 1000
    assert os.path.exists(spool.file())
    # A failed transaction is retried from the first record: every pass reads them all, in order.
    assert _records(spool) == sent
    assert _records(spool) == sent

    unfinished = spool.iterator()  # a transaction that fails half-way
    unfinished.next()
    spool.close()
    assert not os.path.exists(spool.file())


def test_output_within_the_budget_stays_in_memory(fusion_jvm: Any) -> None:
    spool = fusion_jvm.fusion.output.Spool(16 << 20)
    for i in range(100):
        spool.add("t", f"k{i}".encode(), b"v" * 100)
    assert (spool.spilled(), spool.file()) == (0, None)
    assert len(_records(spool)) == 100
    spool.close()
