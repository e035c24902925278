"""The benchmark's Avro records: a schema inferred from a generated record (no registry)."""

from __future__ import annotations

import io

import fastavro
import pytest

from fusion.bench.avro_records import schema_of
from fusion.bench.generator import GenOptions, build_dataset
from fusion.core.config import PipelineConfig


def test_a_generated_record_round_trips_through_its_inferred_schema() -> None:
    record = {"txn_id": "K-1", "amount": 12.5, "coverage_pct": 80, "approved": True}
    schema = fastavro.parse_schema(schema_of(record, "insurance-2"))
    body = io.BytesIO()

    fastavro.schemaless_writer(body, schema, record)
    body.seek(0)

    assert fastavro.schemaless_reader(body, schema, None) == record
    assert schema_of(record, "insurance-2")["name"] == "insurance_2"
    with pytest.raises(ValueError, match="no Avro type for a generated dict"):
        schema_of({"o": {"a": 1}}, "x")


def test_the_generator_hands_an_avro_sources_records_to_its_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fusion.bench import generator

    config = PipelineConfig.model_validate({
        "pipeline": {"name": "p", "key_field": "txn_id"},
        "registry": {"url": "http://registry.test/apis/ccompat/v7"},
        "sources": [{"name": "billing", "format": "avro"}, {"name": "insurance"}],
    })  # fmt: skip
    encoded: list[dict[str, object]] = []

    def encoder(config: PipelineConfig, source: object) -> object:
        return lambda record: encoded.append(record) or b"\x00\x00\x00\x00\x01avro"

    monkeypatch.setattr(generator, "avro_encoder", encoder)
    data = build_dataset(config, GenOptions(keys=5, duplicate_rate=0, missing_rate=0))

    billing = [v for topic, _, v in data.records if topic == config.topic_of(config.sources[0])]
    assert billing == [b"\x00\x00\x00\x00\x01avro"] * 5 and len(encoded) == 5
    assert {r["txn_id"] for r in encoded} == set(data.expected)
