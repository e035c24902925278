"""Debezium's change events: the row each carries, and whether it deletes it."""

from __future__ import annotations

import json

import pytest

from indexers.changes import NotAChange, change_of
from indexers.records import RawRecord, SourceRecord, Tombstone, parse

ROW = {"order_id": 7, "total": 12.5}


@pytest.mark.parametrize("op", ["c", "r", "u"])
def test_an_insert_a_snapshot_read_and_an_update_carry_the_row_after(op: str) -> None:
    event = {"before": None, "after": ROW, "op": op, "source": {"table": "orders"}}
    assert change_of(event) == change_of({"schema": {"type": "struct"}, "payload": event})
    assert change_of(event).row == ROW and not change_of(event).deleted


def test_a_delete_carries_the_row_before_and_the_flattened_form_says_deleted() -> None:
    deleted = change_of({"before": {"order_id": 7}, "after": None, "op": "d"})
    assert deleted.row == {"order_id": 7} and deleted.deleted
    flat = change_of({**ROW, "__deleted": "true", "__op": "d", "__table": "orders"})
    assert flat.row == ROW and flat.deleted
    assert not change_of({**ROW, "__deleted": "false"}).deleted


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"op": "x", "after": ROW}, "unknown op 'x'"),
        ({"op": [], "after": ROW}, r"unknown op \[\]"),  # a list is unhashable: no TypeError
        ({"op": "d", "before": None}, "a delete (op 'd') without 'before'"),
        ({"op": "u", "after": None}, "op 'u' (update) without 'after'"),
        ({"schema": {}, "payload": [1]}, "'payload' is not an object"),
        (ROW, "not a Debezium change event"),
        ([ROW], "not a JSON object (got list)"),
    ],
)
def test_what_is_no_change_event_says_why(event: object, reason: str) -> None:
    with pytest.raises(NotAChange, match=reason.replace("(", r"\(").replace(")", r"\)")):
        change_of(event)


def test_a_change_event_indexes_its_row_and_keys_it_from_the_row_or_the_record_key() -> None:
    value = json.dumps({"before": None, "after": ROW, "op": "c"}).encode()
    by_row = parse(RawRecord(value, "t", 0, 5), "orders", "order_id", 1000, "debezium")
    assert isinstance(by_row, SourceRecord) and by_row.key == "7" and by_row.doc == ROW
    assert json.loads(by_row.source) == ROW  # the row, not the envelope
    keyed = RawRecord(value, "t", 0, 5, b'{"order_id": 7}')
    by_key = parse(keyed, "orders", "record_key.order_id", 1000, "debezium")
    assert isinstance(by_key, SourceRecord) and by_key.key == "7"


def test_a_delete_writes_a_tombstone_document_and_the_tombstone_record_is_dropped() -> None:
    value = json.dumps({"before": {"order_id": 7}, "after": None, "op": "d"}).encode()
    deletion = parse(RawRecord(value, "t", 0, 8), "orders", "order_id", 1000, "debezium")
    assert isinstance(deletion, SourceRecord) and deletion.deleted and deletion.key == "7"
    assert deletion.version == 9 and deletion.digest is None
    # Indexed, keyed as the source's documents are: its version orders later writes.
    assert json.loads(deletion.source) == {"order_id": "7", "fusion": {"deleted": True, "key": "7"}}
    by_key = RawRecord(value, "t", 0, 8, b'{"order_id": 7}')
    stored = parse(by_key, "orders", "record_key.order_id", 1000, "debezium", store_key=True)
    assert isinstance(stored, SourceRecord)
    assert json.loads(stored.source) == {"fusion": {"deleted": True, "key": "7"}}
    tombstone = parse(RawRecord(None, "t", 0, 9), "orders", "order_id", 1000, "debezium")
    assert tombstone == Tombstone(("t", 0, 9))
