from __future__ import annotations

import base64
import json

import pytest

from fusion.core.events import DeadLetter
from fusion.elastic.bulk import bulk_actions
from indexers.records import RawRecord, SourceRecord, latest_per_key, parse


def raw(value: bytes | None, offset: int = 7, partition: int = 0) -> RawRecord:
    return RawRecord(value, "billing", partition, offset)


def test_valid_record_is_keyed_by_the_join_key() -> None:
    parsed = parse(raw(b'{"txn_id": "T-1", "amount": 3.5}'), "billing", "txn_id", 1000)

    assert isinstance(parsed, SourceRecord)
    assert (parsed.key, parsed.doc) == ("T-1", {"txn_id": "T-1", "amount": 3.5})
    assert parsed.where == ("billing", 0, 7)


def test_elasticsearch_gets_the_records_own_utf8_bytes_and_other_encodings_re_encoded() -> None:
    value = b'{"txn_id": "T-1",  "amount": 3.50}'
    utf8 = parse(raw(value), "billing", "txn_id", 1000)
    utf16 = parse(raw(value.decode().encode("utf-16")), "billing", "txn_id", 1000)

    assert isinstance(utf8, SourceRecord) and utf8.source is value
    assert isinstance(utf16, SourceRecord)
    assert utf16.source == b'{"txn_id":"T-1","amount":3.5}'  # the parsed document, in UTF-8


def test_integer_keys_become_strings() -> None:
    parsed = parse(raw(b'{"txn_id": 42}'), "billing", "txn_id", 1000)

    assert isinstance(parsed, SourceRecord) and parsed.key == "42"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"{oops", "invalid JSON"),
        (b"\xc3\x28\xff", "invalid JSON"),  # not UTF-8 (nor UTF-16 or UTF-32)
        (b"\xff\xfe", "invalid JSON"),  # a UTF-16 byte-order mark, then no document
        (b"[1, 2]", "not a JSON object (got list)"),
        (b'"text"', "not a JSON object (got str)"),
        (b'{"amount": 1}', "missing key field 'txn_id'"),
        (b'{"txn_id": null}', "key field 'txn_id' is null"),
        (b'{"txn_id": {"a": 1}}', "must be a string or an integer"),
        (b'{"txn_id": true}', "must be a string or an integer"),
        (b'{"txn_id": ""}', "1 to 512 bytes"),
        (None, "empty value"),
        (b'{"txn_id": "T-1", "pad": "' + b"x" * 2000 + b'"}', "exceeds the 1000-byte limit"),
    ],
)
def test_bad_records_become_dead_letters_with_reason(value: bytes | None, reason: str) -> None:
    parsed = parse(raw(value), "billing", "txn_id", 1000)

    assert isinstance(parsed, DeadLetter)
    assert reason in parsed.reason
    assert (parsed.stage, parsed.source, parsed.topic, parsed.offset) == (
        "indexer", "billing", "billing", 7,
    )  # fmt: skip


def test_dead_letter_keeps_original_bytes() -> None:
    text = parse(raw(b"{oops"), "billing", "txn_id", 1000)
    binary = parse(raw(b"\xc3\x28\xff"), "billing", "txn_id", 1000)  # not UTF-8

    assert isinstance(text, DeadLetter) and isinstance(binary, DeadLetter)
    assert (text.original, text.original_encoding) == ("{oops", "utf-8")
    assert binary.original_encoding == "base64"
    assert base64.b64decode(binary.original or "") == b"\xc3\x28\xff"
    assert json.loads(text.to_bytes())["reason"].startswith("invalid JSON")


def test_latest_record_per_key_wins() -> None:
    def rec(key: str, offset: int, amount: int) -> SourceRecord:
        parsed = parse(
            raw(json.dumps({"txn_id": key, "amount": amount}).encode(), offset), "b", "txn_id", 1000
        )
        assert isinstance(parsed, SourceRecord)
        return parsed

    kept = latest_per_key([rec("A", 5, 1), rec("B", 6, 2), rec("A", 9, 3), rec("A", 7, 4)])

    assert {r.key: r.doc["amount"] for r in kept} == {"A": 3, "B": 2}


def test_bulk_actions_use_the_key_as_id_the_offset_as_version_and_leave_records_alone() -> None:
    parsed = parse(raw(b'{"txn_id": "T-9", "x": 1}'), "billing", "txn_id", 1000)
    assert isinstance(parsed, SourceRecord)

    actions = list(bulk_actions("hc-billing", [parsed]))

    assert actions == [
        (
            {
                "index": {
                    "_index": "hc-billing",
                    "_id": "T-9",
                    # Same version on a replay rewrites; an older record can never win.
                    "version": parsed.offset + 1,
                    "version_type": "external_gte",
                }
            },
            b'{"txn_id": "T-9", "x": 1}',
        )
    ]
    assert parsed.doc == {"txn_id": "T-9", "x": 1}


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (b'{"id": "k1", "n": 2}', b'{"id": "k1", "n": 2,"fusion":{"ts":1764000000123}}'),
        (b'{"id": "k1"}\n  ', b'{"id": "k1","fusion":{"ts":1764000000123}}'),
        # A record with an object of its own under "fusion": the time joins it.
        (b'{"id": "k1", "fusion": {"x": 1}}', b'{"id":"k1","fusion":{"x":1,"ts":1764000000123}}'),
    ],
)
def test_the_stored_document_keeps_its_records_kafka_timestamp(value: bytes, stored: bytes) -> None:
    """Where a key's latency starts: the enricher reads it back from the parts it fetches."""
    raw = RawRecord(value, "billing", 0, 7, None, 1_764_000_000_123)
    record = parse(raw, "billing", "id", 1 << 20)
    assert isinstance(record, SourceRecord)

    assert record.source == stored
    assert json.loads(record.source)["fusion"]["ts"] == 1_764_000_000_123


def test_a_deleted_rows_tombstone_keeps_the_time_and_is_still_a_tombstone() -> None:
    from indexers.records import is_tombstone

    event = {"before": {"id": "k1"}, "after": None, "op": "d", "source": {}}
    raw = RawRecord(json.dumps(event).encode(), "billing", 0, 7, None, 1_764_000_000_123)
    record = parse(raw, "billing", "id", 1 << 20, "debezium")
    assert isinstance(record, SourceRecord) and record.deleted

    stored = json.loads(record.source)
    assert stored["fusion"] == {"deleted": True, "key": "k1", "ts": 1_764_000_000_123}
    assert is_tombstone(stored)
