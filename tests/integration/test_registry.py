"""The schema registry Avro sources will read their writer schemas from: a real Apicurio.

Started once per session by the ``registry`` fixture (``fusion infra up
--registry`` in a deployment); confluent-kafka's own client and Avro serializer
talk to its Confluent-compatible API, as producers of Avro topics do.
"""

from __future__ import annotations

import struct

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from fusion.infra.registry.apicurio import call

ORDER = """{"type": "record", "name": "Order", "fields": [
  {"name": "order_id", "type": "string"}, {"name": "amount", "type": "double"}]}"""
# The same record, a field added with a default: a compatible evolution.
ORDER_V2 = """{"type": "record", "name": "Order", "fields": [
  {"name": "order_id", "type": "string"}, {"name": "amount", "type": "double"},
  {"name": "currency", "type": "string", "default": "EUR"}]}"""


def test_avro_records_in_the_confluent_wire_format_round_trip_through_the_registry(
    registry: str,
) -> None:
    client = SchemaRegistryClient({"url": registry})
    topic = "orders-registry-test"
    context = SerializationContext(topic, MessageField.VALUE)
    first = AvroSerializer(client, ORDER)({"order_id": "o-1", "amount": 12.5}, context)
    second = AvroSerializer(client, ORDER_V2)(
        {"order_id": "o-2", "amount": 3.0, "currency": "USD"}, context
    )

    # A zero byte, the writer schema's id, the Avro body: each record names its own schema.
    assert first[0] == 0 and second[0] == 0
    first_id, second_id = struct.unpack(">I", first[1:5])[0], struct.unpack(">I", second[1:5])[0]
    assert first_id != second_id
    assert sorted(call(registry, "GET", f"/subjects/{topic}-value/versions")) == [1, 2]
    schema: Schema = client.get_schema(second_id)
    assert "currency" in schema.schema_str

    read = AvroDeserializer(client)  # each record read with the schema it was written with
    assert read(first, context) == {"order_id": "o-1", "amount": 12.5}
    assert read(second, context) == {"order_id": "o-2", "amount": 3.0, "currency": "USD"}
