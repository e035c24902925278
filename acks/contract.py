"""The ack event: "this source's document for this key is in Elasticsearch and searchable".

An indexer publishes one ack per document that Elasticsearch confirmed after a
``refresh=wait_for`` bulk write. Kafka key: the join key. Value: UTF-8 JSON::

    {"key": "T-1", "source": "billing", "index": "healthcare-billing", "doc_id": "T-1",
     "seq_no": 3, "primary_term": 1, "version": 2,
     "topic": "billing", "partition": 0, "offset": 41,
     "acked_at": "2026-11-21T10:00:00.123456Z", "digest": "9f2c4e1a0b7d3e55",
     "deleted": false, "ref": null, "ref_version": 0, "via": []}

A dimension's slot ack (docs/dimensions.md) is keyed by the key of the
record that names the row: its ``source`` is the reference's name (a chain's
path: ``brand.company``), its ``version`` the naming record's, ``ref`` the id
it names and ``ref_version`` that row's version (0 when the row is not there,
which ``deleted`` then says); a chain's ``via`` the versions of the rows
between them (the brand's), which order it after the record's version.

A children source's ack (docs/children.md) is keyed by the parent whose
children changed: ``doc_id`` the child's key, ``deleted`` when the child left
that parent.

This module owns the schema, the (de)serialisation and the validation. The
counter reads acks as ``from_json`` with :data:`ACK_SPARK_SCHEMA` would, with
a faster parser of its own (``fusion.counter.AckParser``), held to
``from_json`` by a test.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from acks.errors import AckError
from fusion.core import iso_utc


class Ack(BaseModel):
    """One confirmed, searchable source document."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(min_length=1)
    source: str = Field(min_length=1)
    index: str
    doc_id: str
    seq_no: int = Field(ge=0)
    primary_term: int = Field(ge=1)
    version: int = Field(ge=1)
    topic: str
    partition: int = Field(ge=0, json_schema_extra={"spark": "INT"})  # Kafka's type
    offset: int = Field(ge=0)
    acked_at: datetime
    # Hash of the document's content: tells the counter a real change from a re-sent duplicate.
    digest: str | None = None
    # The source's row was deleted (a change event's delete): the document says so now.
    deleted: bool = False
    ref: str | None = None
    ref_version: int = Field(default=0, ge=0)
    # The counter reads it as its JSON text (fusion.counter.rules.parse_via).
    via: tuple[int, ...] = Field(default=(), json_schema_extra={"spark": "STRING"})

    @field_serializer("acked_at")
    def _utc(self, value: datetime) -> str:
        return iso_utc(value)

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, value: bytes | str) -> Ack:
        try:
            return cls.model_validate_json(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "value"
            raise AckError(f"{where}: {first['msg']}") from None


def spark_ddl(model: type[BaseModel]) -> str:
    """The Spark DDL of ``model``'s JSON, derived from its fields: one definition of the schema.

    Integers are ``BIGINT`` unless a field says otherwise (``json_schema_extra={"spark":
    "INT"}``); timestamps stay strings until needed, as they are on the wire.
    """
    columns = []
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        kind = extra.get("spark") or _SPARK_TYPES[_plain(field.annotation)]
        columns.append(f"{name} {kind}")
    return ", ".join(columns)


_SPARK_TYPES = {str: "STRING", int: "BIGINT", datetime: "STRING", bool: "BOOLEAN"}


def _plain(annotation: Any) -> type:
    """``str`` of ``str | None``: the one type an optional field holds."""
    kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
    return kinds[0] if kinds else annotation  # type: ignore[no-any-return]


# What the counter's from_json reads (fusion.counter.query).
ACK_SPARK_SCHEMA = spark_ddl(Ack)
