"""Any bytes on a source topic end as a record or a dead letter: nothing on the way raises.

Property-based (hypothesis): arbitrary bytes, and arbitrary JSON documents in
every encoding JSON may come in, with the values that parse yet used to raise
later among the strategies (unpaired surrogates, integers Python will not
convert, nesting deeper than the parser goes, numbers JSON cannot spell, control
characters and byte-order marks). Each goes through the indexer's whole record
path: parse, the digest, the bulk action, the ack and the dead letter.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acks.kafka import ack_records
from fusion.core.config import RESERVED_FIELD
from fusion.core.config_values import SourceFormat
from fusion.core.events import DeadLetter, dead_letter_records
from fusion.elastic.bulk import Confirmed, bulk_actions
from indexers.dimensions import record_content
from indexers.records import (
    RawRecord,
    SourceRecord,
    Tombstone,
    content_digest,
    latest_per_key,
    parse,
)
from indexers.task import document_acks
from tests.strategies import DOCUMENT, ENCODING, KEY_FIELD, RAW_VALUE, encoded

MAX_BYTES = 64 * 1024
TIMESTAMP_MS = 1_764_000_000_123


def _whole_path(
    value: bytes | None,
    key: str = KEY_FIELD,
    fmt: SourceFormat = "json",
    record_key: bytes | None = None,
) -> SourceRecord | DeadLetter | Tombstone:
    """One record through every step of the indexer that could raise on its content."""
    raw = RawRecord(value, "billing", 0, 41, record_key, TIMESTAMP_MS)
    parsed = parse(raw, "billing", key, MAX_BYTES, fmt)
    if isinstance(parsed, Tombstone):
        assert fmt == "debezium" and parsed.where == ("billing", 0, 41)
        return parsed
    if isinstance(parsed, DeadLetter):
        records = dead_letter_records("fusion.dlq", [parsed], limit=4096)
        assert len(records) == 1 and json.loads(records[0][2])["offset"] == 41
        return parsed
    assert isinstance(parsed, SourceRecord)
    ((action, source),) = bulk_actions("billing-index", latest_per_key([parsed]))
    assert isinstance(source, bytes) and action["index"]["_id"] == parsed.key
    # What Elasticsearch stores keeps the record's Kafka timestamp, and is the record's
    # content besides: the digest of what a later read finds is the record's own.
    stored = json.loads(source)
    assert stored[RESERVED_FIELD]["ts"] == TIMESTAMP_MS
    if not parsed.deleted:
        assert content_digest(record_content(stored)) == parsed.digest
    confirmed = Confirmed(parsed, "billing-index", 3, 1, parsed.version)
    (ack,) = ack_records("fusion.acks", document_acks("billing", [confirmed]))
    assert json.loads(ack[2])["key"] == parsed.key
    return parsed


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RAW_VALUE)
@example(b'{"id": "\\ud800"}')
@example(b'{"id": "k", "n": 1' + b"0" * 5000 + b"}")
@example(b'{"id": "k", "deep": ' + b"[" * 20_000 + b"]" * 20_000 + b"}")
def test_any_bytes_become_a_record_or_a_dead_letter(value: bytes | None) -> None:
    _whole_path(value)


def _envelope(row: Any, op: Any, wrapped: bool) -> bytes:
    """A Debezium change event around ``row`` (any JSON), in the converter's wrapper or not."""
    event = {"before": row if op == "d" else None, "after": row, "op": op, "source": {}}
    return json.dumps({"schema": {}, "payload": event} if wrapped else event).encode()


def _flattened(row: Any, deleted: Any) -> bytes:
    """ExtractNewRecordState's row (or whatever ``row`` is) with its ``__deleted`` flag."""
    flat = {**row, "__deleted": deleted} if isinstance(row, dict) else [row]
    return json.dumps(flat).encode()


OP = st.sampled_from(["c", "r", "u", "d", "x", None, 7])
CHANGE_VALUE = st.one_of(
    RAW_VALUE,
    st.builds(_envelope, DOCUMENT, OP, st.booleans()),
    st.builds(_flattened, DOCUMENT, st.sampled_from(["true", "false", 1])),
)
KEY_LOCATION = st.sampled_from([KEY_FIELD, "a.b", "id.x", "record_key", "record_key.id"])
RECORD_KEY = st.one_of(st.none(), st.binary(max_size=40), st.builds(encoded, DOCUMENT, ENCODING,
                       st.booleans()))  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHANGE_VALUE, KEY_LOCATION, st.sampled_from(["json", "debezium"]), RECORD_KEY)
def test_any_record_of_any_format_and_key_location_ends_as_one_outcome(
    value: bytes | None, key: str, fmt: SourceFormat, record_key: bytes | None
) -> None:
    _whole_path(value, key, fmt, record_key)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"id": "\\ud800"}', "key field 'id' is not valid Unicode"),
        (b'{"id": "k", "s": "a\\udfffb"}', "not valid Unicode text"),
        (b'{"id": "k", "n": 1' + b"0" * 5000 + b"}", "invalid JSON: Exceeds the limit"),
        (b'{"id": "k", "d": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", "invalid JSON: maximum"),
        # UTF-8 bytes of a surrogate: Python's parser reads them as one.
        (b'{"id": "\xed\xa0\x80"}', "key field 'id' is not valid Unicode"),
        (b'{"id": 1e999}', "must be a string or an integer, got inf"),
    ],
)
def test_values_that_parse_yet_raised_later_are_dead_letters_naming_why(
    value: bytes, reason: str
) -> None:
    letter = _whole_path(value)

    assert isinstance(letter, DeadLetter)
    assert reason in letter.reason and "\n" not in letter.reason
    assert letter.offset == 41


def test_an_integer_key_and_its_decimal_text_are_the_same_key() -> None:
    """Documented in docs/contracts.md: 42 and "42" are one key, one _id, one join."""
    number, text = _whole_path(b'{"id": 42}'), _whole_path(b'{"id": "42"}')

    assert isinstance(number, SourceRecord) and isinstance(text, SourceRecord)
    assert number.key == text.key == "42"
