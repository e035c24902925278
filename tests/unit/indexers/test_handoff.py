"""The single query's hand-off rows: records to publish, their acks, and acks handed on."""

from __future__ import annotations

from datetime import UTC, datetime

from acks.contract import Ack
from indexers.handoff import handoff_batch
from indexers.task import Indexed

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _ack(key: str, source: str = "item", **extra: object) -> Ack:
    return Ack.model_validate(
        {"key": key, "source": source, "index": "i", "doc_id": key, "seq_no": 0,
         "primary_term": 1, "version": 3, "topic": "t", "partition": 0, "offset": 2,
         "acked_at": AT} | extra
    )  # fmt: skip


def test_published_acks_and_acks_handed_on_unpublished() -> None:
    published = _ack("7")
    slot = _ack("7", "brand", ref="A", ref_version=5)
    indexed = Indexed(
        "t-0",
        [("dlq", None, b"dead"), ("acks", "7", published.to_bytes())],
        {"n": 2},
        [published],
        handed=[slot],
    )
    rows = handoff_batch(indexed).to_pylist()

    assert [r["topic"] for r in rows] == ["dlq", "acks", None, None]
    assert [r["k"] for r in rows] == [None, "7", None, "7"]  # the count row has no ack
    assert rows[2]["name"] == "n" and rows[2]["amount"] == 2
    handed = rows[3]
    assert handed["task"] == "t-0" and handed["value"] == slot.to_bytes()
    assert (handed["source"], handed["ref"], handed["ref_version"]) == ("brand", "A", 5)
