"""Children rows: the order they sort in, where each was, and which parents hear of a write."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fusion.elastic import Confirmed
from indexers.children import (
    NOWHERE,
    PAST_EVERY_ORDER,
    Place,
    Stored,
    child_acks,
    order_value,
    parents_told,
    placed,
    previous_place,
    stored_of,
)
from indexers.records import RawRecord, SourceRecord, is_tombstone, parse

AT = datetime(2026, 11, 28, tzinfo=UTC)
numbers = st.integers(min_value=-(10**30), max_value=10**30) | st.floats(
    allow_nan=False, allow_infinity=False
)


@given(numbers, numbers)
def test_numbers_sort_by_value(a: int | float, b: int | float) -> None:
    left, right = order_value(a), order_value(b)
    assert (left < right) == (Decimal(a) < Decimal(b))
    assert (left == right) == (Decimal(a) == Decimal(b))


@given(st.text(), st.text())
def test_text_sorts_by_code_point_as_a_keyword_does(a: str, b: str) -> None:
    # Elasticsearch compares keywords by their UTF-8 bytes: the code points' order.
    assert (order_value(a).encode() < order_value(b).encode()) == (a < b)


def test_kinds_sort_booleans_numbers_text_objects_then_null() -> None:
    values: list[Any] = [False, True, -math.inf, -5, 0, 2.5, 10, math.inf, "", "a", [1], None]
    keys = [order_value(v) for v in values]
    assert keys == sorted(keys)
    assert all(key < PAST_EVERY_ORDER for key in keys)
    assert order_value(9) < order_value(10)  # not as the text "10" and "9" would


def _record(key: str, parent: str | None, offset: int, deleted: bool = False) -> SourceRecord:
    doc = {"line_id": int(key), "order_id": parent, "qty": 1}
    return SourceRecord(key, doc, "lines", 0, offset, b"", None if deleted else f"d{offset}",
                        deleted=deleted, parent=None if deleted else parent)  # fmt: skip


def test_where_a_child_was_before_a_write() -> None:
    here, there = Place("A", "d1"), Place("B", "d2")
    assert previous_place(None, 6) == NOWHERE
    assert previous_place(Stored(3, here, NOWHERE), 6) == here  # from a committed batch
    # Written by this batch already (from offset 6 on): where it was before that write.
    assert previous_place(Stored(7, there, here), 6) == here


def _written(record: SourceRecord) -> Stored:
    """What Elasticsearch holds once ``record`` is written."""
    return stored_of({"_version": record.version, "_source": json.loads(record.source)})


def test_a_retried_task_of_two_chunks_tells_the_parent_the_child_left() -> None:
    # Committed: line 1 in order A. This batch, from offset 10: chunk 1 moves it to B, chunk 2
    # to C; the task dies before its acks are published, and is retried.
    committed = Stored(1, Place("A", "d0"), NOWHERE)

    def acks(record: SourceRecord, stored: Stored) -> list[tuple[str, bool]]:
        (done,) = placed([record], "line_id", {"1": stored}, since=10)
        item = Confirmed(done, "lines", 0, 1, done.version)
        return [(a.key, a.deleted) for a in child_acks("order_lines", [item], AT)], done

    first, one = acks(_record("1", "B", 10), committed)
    second, two = acks(_record("1", "C", 20), _written(one))
    assert first == [("B", False), ("A", True)] and second == [("C", False), ("A", True)]
    # The retry: chunk 1's write is now stale (refused, no ack); chunk 2 still tells A.
    again, _ = acks(_record("1", "C", 20), _written(two))
    assert again == [("C", False), ("A", True)]


def test_which_parents_a_write_tells() -> None:
    assert parents_told(_record("1", "A", 1), NOWHERE) == ("A", None)  # a new line
    assert parents_told(_record("1", "B", 1), Place("A", "d0")) == ("B", "A")  # moved
    assert parents_told(_record("1", "A", 1), Place("A", "d0")) == ("A", None)  # changed
    assert parents_told(_record("1", "A", 1), Place("A", "d1")) == (None, None)  # the same
    assert parents_told(_record("1", None, 1, deleted=True), Place("A", "d0")) == (None, "A")
    assert parents_told(_record("1", None, 1, deleted=True), NOWHERE) == (None, None)


def test_a_placed_child_keeps_its_parent_order_and_where_it_was() -> None:
    stored = {"1": Stored(1, Place("A", "d0"), NOWHERE)}
    moved, new = placed([_record("1", "B", 4), _record("2", "B", 5)], "line_id", stored, 4)
    assert moved.child == {
        "before": {"parent": "A", "digest": "d0"},
        "parent": "B", "order": order_value(1), "digest": "d4",
    }  # fmt: skip
    assert new.child["before"] == {"parent": None, "digest": None}
    body = json.loads(moved.source)
    assert body["fusion"]["parent"] == "B" and body["qty"] == 1
    # Read back by the next write of the row: where it is, and where it was.
    hit = {"_version": 5, "_source": body}
    assert stored_of(hit) == Stored(5, Place("B", "d4"), Place("A", "d0"))


def test_a_deleted_child_is_a_tombstone_that_remembers_its_parent() -> None:
    stored = {"1": Stored(1, Place("A", "d0"), NOWHERE)}
    (gone,) = placed([_record("1", None, 4, deleted=True)], "line_id", stored, 4)
    body = json.loads(gone.source)
    assert is_tombstone(body)
    assert stored_of({"_version": 5, "_source": body}) == Stored(5, NOWHERE, Place("A", "d0"))


def test_the_acks_go_to_the_parents_keyed_by_them_once_a_write() -> None:
    stored = {"1": Stored(1, Place("A", "d0"), NOWHERE), "3": Stored(1, Place("B", "d0"), NOWHERE)}
    rows = [_record("1", "B", 4), _record("2", "B", 5), _record("3", None, 6, deleted=True)]
    records = placed(rows, "line_id", stored, 4)
    confirmed = [Confirmed(r, "shop-lines", r.offset, 1, r.version) for r in records]
    acks = list(child_acks("order_lines", confirmed, AT))
    # B is told once, by the last row that changed it (row 3 left it); A once, that 1 left.
    assert [(a.key, a.doc_id, a.deleted, a.version) for a in acks] == [
        ("B", "3", True, 7), ("A", "1", True, 5),
    ]  # fmt: skip
    assert all(a.source == "order_lines" and a.digest is None for a in acks)


def _raw(value: Any) -> RawRecord:
    return RawRecord(json.dumps(value).encode(), "lines", 0, 3)


def test_a_child_without_its_parent_is_a_dead_letter() -> None:
    def reason(value: Any) -> str:
        parsed = parse(_raw(value), "order_lines", "line_id", 10_000, parent="order_id")
        return str(getattr(parsed, "reason", ""))

    assert reason({"line_id": 1}) == "no parent: missing key field 'order_id'"
    assert "must be a string or an integer" in reason({"line_id": 1, "order_id": {"a": 1}})
    assert "must be a string or an integer" in reason({"line_id": 1, "order_id": [7]})
    assert reason({"line_id": 1, "order_id": None}) == "no parent: key field 'order_id' is null"
    parsed = parse(_raw({"line_id": 1, "order_id": 7}), "order_lines", "line_id", 10_000,
                   parent="order_id")  # fmt: skip
    assert isinstance(parsed, SourceRecord) and (parsed.key, parsed.parent) == ("1", "7")


def test_a_deleted_childs_event_needs_no_parent() -> None:
    # PostgreSQL's default replica identity: a delete's before row holds the key alone.
    event = {"op": "d", "before": {"line_id": 1}, "after": None}
    parsed = parse(_raw(event), "order_lines", "line_id", 10_000, "debezium", parent="order_id")
    assert isinstance(parsed, SourceRecord) and parsed.deleted and parsed.parent is None
