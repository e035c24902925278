from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from acks.contract import Ack
from acks.errors import AckError

FIELDS = {
    "key", "source", "index", "doc_id", "seq_no", "primary_term", "version",
    "topic", "partition", "offset", "acked_at", "digest", "deleted",
    "ref", "ref_version", "via"}  # fmt: skip


def _ack(**changes: object) -> Ack:
    values: dict[str, object] = {
        "key": "T-1", "source": "billing", "index": "hc-billing", "doc_id": "T-1",
        "seq_no": 3, "primary_term": 1, "version": 2, "topic": "billing",
        "partition": 0, "offset": 41, "acked_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    }  # fmt: skip
    return Ack.model_validate(values | changes)


def test_round_trip_and_wire_shape() -> None:
    ack = _ack()

    wire = json.loads(ack.to_bytes())

    assert set(wire) == FIELDS
    assert wire["acked_at"] == "2026-01-02T03:04:05.000000Z"
    assert Ack.from_bytes(ack.to_bytes()) == ack


def test_times_are_written_in_utc() -> None:
    ack = _ack(acked_at=datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))))

    assert json.loads(ack.to_bytes())["acked_at"] == "2026-01-02T03:04:05.000000Z"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (b"{not json", "value"),
        (b'{"key": "T-1"}', "source: Field required"),
        (_ack().to_bytes().replace(b'"offset":41', b'"offset":-1'), "offset"),
        (_ack().to_bytes().replace(b'"key":"T-1"', b'"key":""'), "key"),
    ],
)
def test_invalid_acks_are_rejected_with_the_field(value: bytes, problem: str) -> None:
    with pytest.raises(AckError) as caught:
        Ack.from_bytes(value)

    assert problem in str(caught.value)
    assert str(caught.value).startswith("invalid ack:")


def test_the_spark_schema_is_derived_from_the_ack_model() -> None:
    from pydantic import BaseModel

    from acks.contract import ACK_SPARK_SCHEMA, spark_ddl

    # The columns and types the JVM counter reads (fusion/jvm/.../AckCounter.java).
    assert ACK_SPARK_SCHEMA == (
        "key STRING, source STRING, index STRING, doc_id STRING, seq_no BIGINT, "
        "primary_term BIGINT, version BIGINT, topic STRING, partition INT, offset BIGINT, "
        "acked_at STRING, digest STRING, deleted BOOLEAN, ref STRING, ref_version BIGINT, "
        "via STRING"
    )

    class Later(BaseModel):
        key: str
        attempts: int
        note: str | None = None

    assert spark_ddl(Later) == "key STRING, attempts BIGINT, note STRING"
