"""The ack event: "this source's document for this key is in Elasticsearch and searchable".

An indexer publishes one ack per document that Elasticsearch confirmed after a
``refresh=wait_for`` bulk write. Kafka key: the join key. Value: UTF-8 JSON::

    {"key": "T-1", "source": "billing", "index": "healthcare-billing", "doc_id": "T-1",
     "seq_no": 3, "primary_term": 1, "version": 2,
     "topic": "billing", "partition": 0, "offset": 41,
     "acked_at": "2026-11-21T10:00:00.123456Z", "digest": "9f2c4e1a0b7d3e55"}

This module owns the schema, the (de)serialisation and the validation; the
counter reads acks with :data:`ACK_SPARK_SCHEMA`.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from fusion.errors import ExitCode, FusionError
from fusion.events import iso_utc


class AckError(FusionError):
    """Bytes that are not a valid ack event."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"invalid ack: {problem}")


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
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    acked_at: datetime
    # Hash of the document's content: tells the counter a real change from a re-sent duplicate.
    digest: str | None = None

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


# The Spark DDL of an ack's JSON value; timestamps stay strings until needed.
ACK_SPARK_SCHEMA = (
    "key STRING, source STRING, index STRING, doc_id STRING, seq_no BIGINT, "
    "primary_term BIGINT, version BIGINT, topic STRING, partition INT, offset BIGINT, "
    "acked_at STRING, digest STRING"
)
