"""A fan-out request: "this dimension row changed; every key that names it gets a slot ack".

A dimension's indexer task puts one on ``<pipeline>.fanout`` for each row it
wrote and each reference naming its dimension (docs/dimensions.md). The
indexer works it a page per micro-batch: the keys whose documents name the
row by that reference (a ``term`` query on ``fusion.refs.<reference>``, sorted
by the key), one slot ack each, and, while pages remain, the request again
with ``after`` set to the page's last sort value. Kafka key:
``<dimension>/<id>``, so one row's requests stay in order. Value: UTF-8 JSON::

    {"dimension": "user", "id": "17", "version": 42, "digest": "9f2c4e1a0b7d3e55",
     "requested_at": "2026-11-21T10:00:00.123456Z", "after": null, "keys": 0,
     "reference": "buyer"}

``digest`` is null for a deleted row; ``keys``: how many slot acks earlier
pages of this request published; ``reference``: the slot whose keys are told,
a chain's ending at this row's dimension (``brand/company``), null in a request
published before references had names of their own (the reference named like
the dimension). A chain's request is worked up from the row: ``hop``,
``row`` and ``between`` say where it got (:class:`FanoutRequest`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from acks.errors import AckError
from fusion.core import iso_utc


class FanoutRequest(BaseModel):
    """A changed dimension row, and how far its fan-out got."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dimension: str = Field(min_length=1)
    id: str = Field(min_length=1)
    version: int = Field(ge=1)
    digest: str | None
    requested_at: datetime
    after: list[Any] | None = None
    keys: int = Field(default=0, ge=0)
    reference: str | None = None
    # The rows the changed row names in turn (its fusion.refs): where the slots that extend
    # the reference's chain go on from it.
    refs: dict[str, str] = Field(default_factory=dict)
    # Up a chain (brand/company: the brands naming company 3, then the items naming each):
    # the hop whose referrer is searched (None: the last), the id searched for there (None:
    # ``id``), and the versions of the rows from that one to the changed row.
    hop: int | None = Field(default=None, ge=0)
    row: str | None = None
    between: list[int] = Field(default_factory=list)

    @property
    def through(self) -> str:
        """The reference whose documents this request searches."""
        return self.reference or self.dimension

    @property
    def kafka_key(self) -> str:
        return f"{self.dimension}/{self.id}"

    @field_serializer("requested_at")
    def _utc(self, value: datetime) -> str:
        return iso_utc(value)

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, value: bytes | None) -> FanoutRequest:
        try:
            return cls.model_validate_json(value or b"")
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "value"
            raise AckError(f"fan-out request: {where}: {first['msg']}") from None
