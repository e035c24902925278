"""Benchmark records as Avro in a schema registry's wire format, as a producer writes them.

Each source's schema is inferred from its first generated record (every field
nullable, as a table's columns are), registered under ``<topic>-value`` by
confluent-kafka's ``AvroSerializer``, which then writes each record: a zero
byte, the schema id, the Avro body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fusion.core import PipelineConfig, SourceConfig

_TYPES = ((bool, "boolean"), (int, "long"), (float, "double"), (str, "string"))


def schema_of(record: dict[str, Any], name: str) -> dict[str, Any]:
    """An Avro record schema for ``record``'s fields, each nullable with a null default."""
    fields = [
        {"name": field, "type": ["null", _avro_type(value)], "default": None}
        for field, value in record.items()
    ]
    return {"type": "record", "name": re.sub(r"\W", "_", name) or "Record", "fields": fields}


def _avro_type(value: Any) -> str:
    for kind, avro in _TYPES:
        if isinstance(value, kind):
            return avro
    raise ValueError(f"no Avro type for a generated {type(value).__name__}")


def avro_encoder(config: PipelineConfig, source: SourceConfig) -> Callable[[dict[str, Any]], bytes]:
    """Encodes ``source``'s records for its topic; the schema is registered at the first."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient(config.registry.as_client_config())
    context = SerializationContext(config.topic_of(source), MessageField.VALUE)
    serializers: list[Any] = []

    def encode(record: dict[str, Any]) -> bytes:
        if not serializers:
            schema = json.dumps(schema_of(record, source.name))
            serializers.append(AvroSerializer(client, schema))
        value: bytes = serializers[0](record, context)
        return value

    return encode
