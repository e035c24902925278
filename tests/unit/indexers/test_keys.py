"""Where a source's join key is: a path in the value, the record key, a path in a JSON key."""

from __future__ import annotations

import json

import pytest

from fusion.core.config_values import key_spec
from indexers.keys import InvalidKey, key_of


def test_a_key_location_is_a_dotted_path_in_the_value_or_the_record_key() -> None:
    assert key_spec("txn_id").path == ("txn_id",) and not key_spec("txn_id").in_record_key
    assert key_spec("after.order_id").path == ("after", "order_id")
    assert key_spec("record_key").in_record_key and key_spec("record_key").path == ()
    assert key_spec("record_key.id").path == ("id",)
    assert key_spec("record_key.id").text == "record_key.id"
    for wrong in ("", " ", "a..b", ".a", "a."):
        with pytest.raises(ValueError, match="names no key"):
            key_spec(wrong)


def test_the_key_is_read_where_its_location_says() -> None:
    value = {"customer": {"id": 42}, "txn_id": "T-1"}
    assert key_of(key_spec("txn_id"), value, None) == "T-1"
    assert key_of(key_spec("customer.id"), value, None) == "42"  # an integer's decimal text
    assert key_of(key_spec("record_key"), value, b"K-7") == "K-7"
    assert key_of(key_spec("record_key.order_id"), value, b'{"order_id": 7}') == "7"


@pytest.mark.parametrize(
    ("location", "value", "record_key", "reason"),
    [
        ("txn_id", {}, None, "missing key field 'txn_id'"),
        ("a.b", {"a": 3}, None, "missing key field 'a.b' (a is not an object)"),
        ("a.b", {"a": {"b": {"c": 1}}}, None, "key field 'a.b' must be a string or an integer"),
        ("a", {"a": None}, None, "key field 'a' is null"),
        ("a", {"a": True}, None, "must be a string or an integer, got True"),
        ("a", {"a": "x" * 513}, None, "must be 1 to 512 bytes long"),
        ("a", {"a": "k\n"}, None, "contains a control character"),
        ("record_key", {}, None, "no Kafka record key"),
        ("record_key", {}, b"\xff\xfe", "the record key is not UTF-8 text"),
        ("record_key.id", {}, b"not json", "the record key is not JSON"),
        ("record_key.id", {}, b"[1]", "missing key field 'record_key.id'"),
        ("record_key.id", {}, b'{"id": [1]}', "'record_key.id' must be a string or an integer"),
    ],
)
def test_a_key_that_is_not_there_or_not_a_key_says_why(
    location: str, value: dict[str, object], record_key: bytes | None, reason: str
) -> None:
    with pytest.raises(InvalidKey) as caught:
        key_of(key_spec(location), value, record_key)
    assert reason in str(caught.value)


def test_a_source_keyed_elsewhere_than_a_top_level_field_keeps_its_key_in_its_documents() -> None:
    from fusion.core.config import STORED_KEY, PipelineConfig
    from indexers.records import RawRecord, SourceRecord, parse

    config = PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "txn_id"},
            "sources": [
                {"name": "a"},
                {"name": "b", "key": "order_id"},
                {"name": "c", "key": "customer.id"},
                {"name": "d", "key": "record_key", "format": "debezium"},
            ],
        }
    )
    fields = [config.sort_field(source) for source in config.sources]
    assert fields == ["txn_id", "order_id", STORED_KEY, STORED_KEY]
    record = parse(
        RawRecord(b'{"customer": {"id": 9}}', "t", 0, 1), "c", "customer.id", 99, store_key=True
    )
    assert isinstance(record, SourceRecord)
    assert json.loads(record.source) == {"customer": {"id": 9}, "fusion": {"key": "9"}}
    assert record.doc == {"customer": {"id": 9}}  # what the digest and the ack speak of


def test_a_key_location_that_names_nothing_is_refused_in_the_pipeline_file() -> None:
    from pydantic import ValidationError

    from fusion.core.config import PipelineConfig

    with pytest.raises(ValidationError, match="names no key"):
        PipelineConfig.model_validate(
            {
                "pipeline": {"name": "p", "key_field": "id"},
                "sources": [{"name": "a", "key": "x..y"}, {"name": "b"}],
            }
        )
