"""An Avro source beside a JSON one, through a real schema registry (Apicurio, in memory).

The producer writes with confluent-kafka's ``AvroSerializer``, as Avro topics
are written: its first records with one schema, later ones with the schema
evolved (a field added with a default). Each record is read on the executors
with the schema it was written with; a record without the wire format's header
and one naming a schema the registry does not have are dead letters naming why.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    make_config,
    reached,
    read_topic,
    run_pipeline,
)

ORDER = """{"type": "record", "name": "Order", "fields": [
  {"name": "entity_id", "type": "string"}, {"name": "amount", "type": "double"},
  {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}"""
ORDER_V2 = """{"type": "record", "name": "Order", "fields": [
  {"name": "entity_id", "type": "string"}, {"name": "amount", "type": "double"},
  {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "currency", "type": "string", "default": "EUR"}]}"""


def _with_registry(config: PipelineConfig, url: str) -> PipelineConfig:
    data = config.model_dump(mode="python")
    data["sources"][0]["format"] = "avro"
    return PipelineConfig.model_validate(data | {"registry": {"url": url}})


def test_avro_records_of_two_schema_versions_join_json_ones(
    spark: Any, settings: Settings, tmp_path: Path, registry: str
) -> None:
    config = _with_registry(make_config(settings, tmp_path, ["orders", "payments"]), registry)
    orders, payments = (config.topic_of(s) for s in config.sources)
    context = SerializationContext(orders, MessageField.VALUE)
    client = SchemaRegistryClient({"url": registry})
    v1, v2 = AvroSerializer(client, ORDER), AvroSerializer(client, ORDER_V2)
    placed = 1_795_773_600_000  # 2026-11-27T10:00:00Z
    unknown_id = b"\x00" + struct.pack(">I", 987_654) + b"\x02"
    kafka_topics.ensure_topics(config)
    try:
        produce(
            config,
            [
                (orders, "a", v1({"entity_id": "a", "amount": 12.5, "placed": placed}, context)),
                (
                    orders,
                    "b",
                    v2(
                        {"entity_id": "b", "amount": 3.0, "placed": placed, "currency": "USD"},
                        context,
                    ),
                ),
                (orders, "c", b'{"entity_id": "c", "amount": 1}'),  # JSON on an Avro topic
                (orders, "d", unknown_id),
                (payments, "a", b'{"entity_id": "a", "paid": true}'),
                (payments, "b", b'{"entity_id": "b", "paid": false}'),
            ],
        )
        metrics = run_pipeline(
            spark,
            config,
            done=reached({"enricher.enriched": 2, names.source_count("orders", names.DLQ): 2}),
        )
        docs = enriched_docs(settings, config)
        assert docs["a"]["orders"] == {
            "entity_id": "a", "amount": 12.5, "placed": "2026-11-27T10:00:00Z"
        }  # fmt: skip
        assert docs["b"]["orders"]["currency"] == "USD" and "currency" not in docs["a"]["orders"]
        assert docs["a"]["payments"] == {"entity_id": "a", "paid": True}
        reasons = sorted(letter["reason"] for _, letter in read_topic(settings, config.dlq_topic))
        assert len(reasons) == 2, reasons
        assert "not in the schema registry's wire format" in reasons[0]
        assert f"schema id 987654 is not in the registry at {registry}" in reasons[1]
        assert metrics.get(names.source_count("orders", names.DLQ)) == 2
        # Both indexes were created with the registered schema's types, before any record.
        es = es_client.connect(config.elasticsearch)
        source = es.indices.get_mapping(index=config.index_of(config.sources[0]))
        enriched = es.indices.get_mapping(index=config.enriched_index)
        fields = next(iter(source.body.values()))["mappings"]["properties"]
        nested = next(iter(enriched.body.values()))["mappings"]["properties"]["orders"]
        assert fields["placed"]["type"] == "date" and fields["currency"]["type"] == "keyword"
        assert nested["properties"]["placed"]["type"] == "date"
    finally:
        drop(config)


ORDER_V3 = """{"type": "record", "name": "Order", "fields": [
  {"name": "entity_id", "type": "string"}, {"name": "amount", "type": "double"},
  {"name": "currency", "type": "string", "default": "EUR"}]}"""


ORDER_TEXT_AMOUNT = """{"type": "record", "name": "Order", "fields": [
  {"name": "entity_id", "type": "string"}, {"name": "amount", "type": "string"}]}"""


def test_a_schema_evolved_mid_run_grows_both_mappings_without_refusals(
    spark: Any, settings: Settings, tmp_path: Path, registry: str
) -> None:
    """A field added with a default, then one removed, between two runs of the pipeline: the
    indexes were created from the first schema; the new field reaches both mappings. A version
    whose field changed type (the mappings cannot hold it) is refused at its source index: a
    dead letter naming the field, its key not fired, the enricher refused nothing."""
    config = _with_registry(make_config(settings, tmp_path, ["orders", "payments"]), registry)
    orders, payments = (config.topic_of(s) for s in config.sources)
    context = SerializationContext(orders, MessageField.VALUE)
    client = SchemaRegistryClient({"url": registry})
    placed = 1_795_773_600_000
    kafka_topics.ensure_topics(config)
    try:
        v1 = AvroSerializer(client, ORDER)
        produce(config, [
            (orders, "a", v1({"entity_id": "a", "amount": 1.0, "placed": placed}, context)),
            *[(payments, k, f'{{"entity_id": "{k}"}}'.encode()) for k in "abc"],
        ])  # fmt: skip
        run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") >= 1)
        v2, v3 = AvroSerializer(client, ORDER_V2), AvroSerializer(client, ORDER_V3)
        text = AvroSerializer(client, ORDER_TEXT_AMOUNT)
        produce(config, [
            (orders, "b", v2({"entity_id": "b", "amount": 2.0, "placed": placed,
                              "currency": "USD"}, context)),
            (orders, "c", v3({"entity_id": "c", "amount": 3.0, "currency": "NOK"}, context)),
            (orders, "d", text({"entity_id": "d", "amount": "twelve"}, context)),
            (payments, "d", b'{"entity_id": "d"}'),
        ])  # fmt: skip
        metrics = run_pipeline(
            spark,
            config,
            done=reached({"enricher.enriched": 2, names.source_count("orders", names.DLQ): 1}),
        )

        docs = enriched_docs(settings, config)
        assert set(docs) == {"a", "b", "c"}
        assert "currency" not in docs["a"]["orders"] and docs["b"]["orders"]["currency"] == "USD"
        assert "placed" not in docs["c"]["orders"] and docs["c"]["orders"]["currency"] == "NOK"
        letters = [letter for _, letter in read_topic(settings, config.dlq_topic)]
        assert [(letter["key"], letter["source"]) for letter in letters] == [("d", "orders")]
        assert "amount" in letters[0]["reason"], letters[0]
        assert metrics.get("enricher.dlq") == 0
        enriched = es_client.connect(config.elasticsearch).indices.get_mapping(
            index=config.enriched_index
        )
        grown = next(iter(enriched.body.values()))["mappings"]["properties"]["orders"]
        assert "currency" in grown["properties"] and "placed" in grown["properties"]
    finally:
        drop(config)
