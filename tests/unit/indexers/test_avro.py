"""Avro records in the registry's wire format, read on the executors (no registry: the schema
lookup is replaced by the schemas it would answer; tests/integration has the real one)."""

from __future__ import annotations

import io
import json
import struct
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion.core.config import PipelineConfig
from fusion.core.connections import RegistrySettings
from fusion.core.errors import ConfigError
from fusion.core.settings import Settings
from indexers.avro import NotAvro, Schemas, decode
from indexers.records import RawRecord, SourceRecord, parse

ORDER = {
    "type": "record", "name": "Order",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                    "scale": 2}},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "due", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "blob", "type": "bytes"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}  # fmt: skip


class Answered(Schemas):
    """What a registry holding ``known`` (id -> schema) answers."""

    def __init__(self, known: dict[int, Any]) -> None:
        super().__init__(RegistrySettings(url=f"http://test-{uuid.uuid4().hex}"), 1.0)
        self.known = known

    def _fetch(self, schema_id: int) -> dict[str, Any]:
        if schema_id not in self.known:
            raise NotAvro(f"schema id {schema_id} is not in the registry at {self.url}")
        return {"schema": json.dumps(self.known[schema_id])}


def wire(schema_id: int, schema: Any, record: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


RECORD = {
    "order_id": "o-1", "amount": Decimal("12.50"),
    "placed": datetime(2026, 11, 27, 10, 0, 0, 123000, tzinfo=UTC), "due": date(2026, 12, 1),
    "ref": "6a8f1b2c-0d3e-4f5a-8b6c-7d8e9f0a1b2c", "blob": b"\x00\xff", "note": None,
}  # fmt: skip


def test_a_record_is_read_with_its_writer_schema_into_json() -> None:
    doc = decode(wire(7, ORDER, RECORD), Answered({7: ORDER}))

    assert doc == {
        "order_id": "o-1", "amount": "12.50", "placed": "2026-11-27T10:00:00.123000Z",
        "due": "2026-12-01", "ref": "6a8f1b2c-0d3e-4f5a-8b6c-7d8e9f0a1b2c", "blob": "AP8=",
        "note": None,
    }  # fmt: skip
    json.dumps(doc)  # whatever Avro held is JSON now


def test_records_of_an_evolved_schema_are_each_read_with_their_own() -> None:
    currency = {"name": "currency", "type": "string", "default": "EUR"}
    v2 = {**ORDER, "fields": [*ORDER["fields"], currency]}
    schemas = Answered({7: ORDER, 8: v2})

    old = decode(wire(7, ORDER, RECORD), schemas)
    new = decode(wire(8, v2, {**RECORD, "currency": "USD"}), schemas)

    assert "currency" not in old and new["currency"] == "USD"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"order_id": "o-1"}', "not in the schema registry's wire format"),
        (b"\x00\x00\x00", "it starts 000000"),
        (b"", "it starts empty"),
        (b"\x00\x00\x00\x00\x63" + b"\x02", "schema id 99 is not in the registry"),
        (wire(7, ORDER, RECORD)[:12], "does not decode with schema id 7"),
        (wire(7, ORDER, RECORD) + b"\x01\x02", "2 bytes left after the record of schema id 7"),
    ],
)
def test_what_is_not_avro_of_a_known_schema_says_why(value: bytes, reason: str) -> None:
    with pytest.raises(NotAvro, match=reason):
        decode(value, Answered({7: ORDER}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=60), st.sampled_from([7, 8, 99]))
def test_any_bytes_behind_a_header_are_a_document_or_a_reason(body: bytes, schema_id: int) -> None:
    """No bytes make the decoder raise anything but NotAvro: a dead letter, never a crash."""
    value = b"\x00" + struct.pack(">I", schema_id) + body
    try:
        doc = decode(value, Answered({7: ORDER, 8: {"type": "array", "items": "int"}}))
    except NotAvro as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        json.dumps(doc)


def test_an_avro_source_becomes_a_keyed_document_and_a_bad_record_a_dead_letter() -> None:
    schemas = Answered({7: ORDER})
    raw = RawRecord(wire(7, ORDER, RECORD), "orders", 0, 3, None, 1_764_000_000_000)

    record = parse(raw, "orders", "order_id", 1 << 20, "avro", schemas=schemas)
    letter = parse(RawRecord(b"plain text", "orders", 0, 4), "orders", "order_id", 1 << 20,
                   "avro", schemas=schemas)  # fmt: skip

    assert isinstance(record, SourceRecord) and record.key == "o-1"
    assert json.loads(record.source)["amount"] == "12.50"
    assert not isinstance(letter, SourceRecord) and "wire format" in letter.reason


def test_an_avro_source_without_a_registry_is_one_line_at_load() -> None:
    data = {
        "pipeline": {"name": "p", "key_field": "order_id"},
        "sources": [{"name": "orders", "format": "avro"}, {"name": "payments"}],
    }
    with pytest.raises(
        ValueError, match=r"source 'orders' has format = \"avro\".*\[registry\] url"
    ):
        PipelineConfig.model_validate(data)
    registry = {"url": "http://127.0.0.1:8081/apis/ccompat/v7/"}
    config = PipelineConfig.model_validate({**data, "registry": registry})
    assert config.registry.url == "http://127.0.0.1:8081/apis/ccompat/v7"


def test_the_registry_url_comes_from_the_environment_too() -> None:
    settings = Settings.load(env={"FUSION_REGISTRY_URL": "http://reg:8081/apis/ccompat/v7"})
    assert settings.registry.url == "http://reg:8081/apis/ccompat/v7"
    with pytest.raises(ConfigError, match="FUSION_REGISTRY_URL"):
        Settings.load(env={"FUSION_REGISTRY_URL": "reg:8081"})


def test_a_registry_that_does_not_answer_is_retried_then_an_unavailable_server() -> None:
    """Nothing listens on the port: retried within the budget, then the stop's one line."""
    from fusion.core.errors import ExitCode, ServiceUnavailableError
    from fusion.core.machine.ports import free_port

    url = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    schemas = Schemas(RegistrySettings(url=url, request_timeout=0.5), budget_seconds=1.0)

    with pytest.raises(ServiceUnavailableError) as stopped:
        decode(wire(7, ORDER, RECORD), schemas)

    assert stopped.value.exit_code == ExitCode.UNAVAILABLE
    assert str(stopped.value).startswith(f"schema registry at {url} is unreachable (")
    assert "`fusion infra up --registry`" in str(stopped.value)
    assert "Connection refused" in str(stopped.value) and "\n" not in str(stopped.value)


ROW = {"type": "record", "name": "Value", "fields": [
    {"name": "id", "type": "int"}, {"name": "city", "type": "string"}]}  # fmt: skip
ENVELOPE = {
    "type": "record", "name": "Envelope", "namespace": "shop.public.shipments",
    "fields": [
        {"name": "before", "type": ["null", ROW], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("op", "before", "after", "deleted", "city"),
    [
        ("r", None, {"id": 7, "city": "Oslo"}, False, "Oslo"),
        ("u", {"id": 7, "city": "Oslo"}, {"id": 7, "city": "Pisa"}, False, "Pisa"),
        ("d", {"id": 7, "city": "Pisa"}, None, True, None),
    ],
)
def test_a_debezium_change_event_in_avro_is_a_row_or_its_delete(
    op: str, before: Any, after: Any, deleted: bool, city: str | None
) -> None:
    """Debezium's Avro converter: the same envelope as its JSON one, read with its schema."""
    event = {"before": before, "after": after, "op": op, "ts_ms": 1}
    raw = RawRecord(wire(11, ENVELOPE, event), "shipments", 0, 5, None, 1_764_000_000_000)

    record = parse(
        raw, "shipments", "id", 1 << 20, "debezium-avro", schemas=Answered({11: ENVELOPE})
    )

    assert isinstance(record, SourceRecord) and record.key == "7" and record.deleted is deleted
    assert (None if deleted else record.doc["city"]) == city


def test_a_compacted_topics_tombstone_of_change_events_in_avro_is_dropped_as_in_json() -> None:
    from indexers.records import Tombstone

    raw = RawRecord(None, "shipments", 0, 6)
    assert isinstance(parse(raw, "shipments", "id", 1 << 20, "debezium-avro"), Tombstone)


def test_a_registered_record_schema_gives_the_elasticsearch_types_of_its_fields() -> None:
    from indexers.avro_fields import fields_of

    nested = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}
    schema = {**ORDER, "fields": [*ORDER["fields"],
              {"name": "address", "type": ["null", nested]},
              {"name": "tags", "type": {"type": "array", "items": "string"}},
              {"name": "either", "type": ["int", "string"]}]}  # fmt: skip

    assert fields_of(schema) == {
        "order_id": "keyword", "amount": "keyword", "placed": "date", "due": "date",
        "ref": "keyword", "blob": "keyword", "note": "keyword", "address": "object",
        "address.city": "keyword", "tags": "keyword",
    }  # fmt: skip
    assert fields_of({"type": "array", "items": "int"}) == {}


def test_an_avro_source_without_fields_takes_its_registered_ones_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from indexers import avro_fields

    config = PipelineConfig.model_validate({
        "pipeline": {"name": "p", "key_field": "order_id"},
        "registry": {"url": "http://registry.test/apis/ccompat/v7"},
        "sources": [{"name": "orders", "format": "avro"},
                    {"name": "refunds", "format": "avro"},
                    {"name": "payments", "fields": {"amount": "double"}}],
    })  # fmt: skip
    asked: list[str] = []

    def latest(self: Schemas, subject: str) -> dict[str, Any]:
        asked.append(subject)
        if subject == f"{config.topic_of(config.sources[1])}-value":
            raise NotAvro(f"subject {subject!r} is not in the registry")
        return {"schema": json.dumps(ORDER)}

    monkeypatch.setattr(Schemas, "latest", latest)
    typed = avro_fields.with_registered_fields(config)

    orders, refunds, payments = typed.sources
    assert asked == [f"{config.topic_of(s)}-value" for s in config.sources[:2]]
    assert orders.fields["placed"] == "date" and orders.fields["order_id"] == "keyword"
    assert refunds.fields == {} and payments.fields == {"amount": "double"}
