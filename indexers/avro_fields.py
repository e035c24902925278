"""An Avro source's field types, from the schema its producer registered, before any record.

Elasticsearch learns a field's type from the first document that holds it,
and the enriched index learns its own in another order: the two can disagree,
and the enriched index then refuses a document whose parts were accepted. So
at start (``pipeline.prepare``), an Avro source that declares no ``fields``
takes them from its subject's latest schema in the registry
(``<topic>-value``, the default subject name): both its index and the
enriched index are created with them. A subject not registered yet leaves
the source to dynamic mapping, as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fusion.core import AVRO_FORMATS, FieldType, PipelineConfig
from indexers.avro import NotAvro, Schemas

_PRIMITIVE: dict[str, FieldType] = {
    "string": "keyword", "int": "integer", "long": "long", "float": "float",
    "double": "double", "boolean": "boolean", "bytes": "keyword", "enum": "keyword",
    "fixed": "keyword",
}  # fmt: skip
_LOGICAL: dict[str, FieldType] = {
    "timestamp-millis": "date", "timestamp-micros": "date", "date": "date",
    "local-timestamp-millis": "date", "local-timestamp-micros": "date",
    "decimal": "keyword", "uuid": "keyword", "time-millis": "keyword", "time-micros": "keyword",
}  # fmt: skip


def fields_of(schema: Any, prefix: str = "") -> dict[str, FieldType]:
    """The Elasticsearch field types of a record schema's fields (dotted paths for nested ones);
    a field whose type has no one Elasticsearch type (a union of two) is left out."""
    found: dict[str, FieldType] = {}
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return found
    for field in schema.get("fields", []):
        path = f"{prefix}{field['name']}"
        kind = _one_type(field["type"])
        if isinstance(kind, dict) and kind.get("type") == "record":
            found[path] = "object"
            found |= fields_of(kind, f"{path}.")
        elif (mapped := _mapped(kind)) is not None:
            found[path] = mapped
    return found


def _one_type(kind: Any) -> Any:
    """A union with null is its other type; an array holds its items' type."""
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return _one_type(others[0]) if len(others) == 1 else None
    if isinstance(kind, dict) and kind.get("type") == "array":
        return _one_type(kind.get("items"))
    return kind


def _mapped(kind: Any) -> FieldType | None:
    if isinstance(kind, str):
        return _PRIMITIVE.get(kind)
    if isinstance(kind, dict):
        logical = kind.get("logicalType")
        if logical in _LOGICAL:
            return _LOGICAL[logical]
        if kind.get("type") == "map":
            return "object"
        return _PRIMITIVE.get(str(kind.get("type")))
    return None


def with_registered_fields(config: PipelineConfig) -> PipelineConfig:
    """``config`` with each Avro source that declares no fields given its registered ones."""
    avro = [s for s in config.sources if s.format in AVRO_FORMATS and not s.fields]
    if not avro:
        return config
    schemas = Schemas(config.registry, config.pipeline.retry_budget_seconds)
    registered: Mapping[str, dict[str, FieldType]] = {
        s.name: fields for s in avro if (fields := _latest_fields(schemas, config.topic_of(s)))
    }
    if not registered:
        return config
    data = config.model_dump(mode="python")
    for source in data["sources"]:
        source["fields"] = registered.get(source["name"], source["fields"])
    return PipelineConfig.model_validate(data)


def _latest_fields(schemas: Schemas, topic: str) -> dict[str, FieldType]:
    try:
        answer = schemas.latest(f"{topic}-value")
    except NotAvro:
        return {}  # no schema registered yet: dynamic mapping, as without a registry
    schema = json.loads(answer["schema"]) if answer.get("schemaType", "AVRO") == "AVRO" else {}
    return fields_of(schema)
