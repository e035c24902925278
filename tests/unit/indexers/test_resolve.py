"""The single query's resolve stage: acks and counts go on as they came, the small fan-outs
are searched and their slot acks go on too, the others are asked of the fan-out topic (pure:
the search stands in for Elasticsearch)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from acks.fanout import FanoutRequest
from fusion.counter.rows import INPUT_SCHEMA
from fusion.observe import names
from indexers.dimensions import Named
from indexers.handoff import FANOUT_ROW, LOOKUP_ROW
from indexers.resolve import TASK, resolve_function
from tests.unit.indexers.test_fanout_pages import NAMING, _Items, _job

_TYPES = {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "BOOLEAN": pa.bool_()}
SCHEMA = pa.schema(
    [(name, _TYPES[kind]) for name, kind in (part.split() for part in INPUT_SCHEMA.split(", "))]
)


def _row(**fields: Any) -> dict[str, Any]:
    return {name: fields.get(name) for name in SCHEMA.names}


def _ack(key: str) -> dict[str, Any]:
    raw = json.dumps({"key": key, "source": "item"})
    return _row(k=key, source="item", acked_at="2026-01-01T00:00:00.000000Z", version=3,
                digest="d", raw=raw, topic="catalog.item", partition=0, offset=2, kind="ack",
                deleted=False)  # fmt: skip


def _count(name: str, value: int) -> dict[str, Any]:
    return _row(k="\x00counts", kind="count", count_name=name, count_value=value, executor="e")


def _fanout(row: str, offset: int, topic: str = "catalog.brand") -> dict[str, Any]:
    """Row ``row``'s fan-out: changed in this batch (read from its topic), or a request read
    from the fan-out topic."""
    made = datetime(2026, 1, 1, tzinfo=UTC)
    request = FanoutRequest(dimension="brand", id=row, version=4, digest="d", requested_at=made)
    return _row(k=row, source=FANOUT_ROW, acked_at="2026-01-01T00:00:00.000000Z", version=4,
                digest="d", raw=request.to_bytes().decode(), topic=topic,
                partition=0, offset=offset, kind="ack", deleted=False, ref="brand")  # fmt: skip


def _lookup(key: str, ref: str | None) -> dict[str, Any]:
    named = Named(key, 5, "brand", ref, ("catalog.item", 0, 4))
    return _row(k=key, source=LOOKUP_ROW, version=5, raw=named.to_bytes().decode(),
                topic="catalog.item", partition=0, offset=4, kind="ack", deleted=False,
                ref=ref)  # fmt: skip


class _Rows(_Items):
    """The items' index as before, and brand B's row (at version 9) for a lookup."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[Any] = []

    def mget(self, *, docs: list[dict[str, Any]]) -> dict[str, Any]:
        self.lookups.append([doc["_id"] for doc in docs])
        there = {"B": {"_version": 9, "_source": {"id": "B", "name": "Bolt"}}}
        return {"docs": [{"found": d["_id"] in there, **there.get(d["_id"], {})} for d in docs]}


def _run(tmp_path: Path, page: int, *rows: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    job = replace(_job(tmp_path, page), items=_Rows())
    batch = pa.RecordBatch.from_pylist(list(rows), schema=SCHEMA)
    out = list(resolve_function(job)(iter([batch])))
    return job, [row for b in out for row in b.to_pylist()]


def test_acks_and_counts_go_on_as_they_came(tmp_path: Path) -> None:
    _, out = _run(tmp_path, 5, _ack("7"), _count("indexed", 12))

    ack, count = out
    assert ack["task"] == TASK and ack["topic"] is None, "handed on, not published again"
    assert ack["k"] == "7" and ack["source"] == "item" and ack["version"] == 3
    assert json.loads(ack["value"]) == {"key": "7", "source": "item"}
    assert (ack["s_topic"], ack["s_partition"], ack["s_offset"]) == ("catalog.item", 0, 2)
    assert count["k"] is None and (count["name"], count["amount"]) == ("indexed", 12)


def test_small_fan_outs_are_told_now_the_others_go_on_the_fan_out_topic(tmp_path: Path) -> None:
    # A's 7 keys do not fit a page of 5; B's 3 and C's 1 do; D names none.
    job, out = _run(tmp_path, 5, _fanout("A", 1), _ack("7"), _fanout("B", 2), _fanout("C", 3),
                    _fanout("D", 4))  # fmt: skip

    assert all(row["source"] != FANOUT_ROW for row in out), "the counter never sees one"
    told = [row["k"] for row in out if row["source"] == "brand"]
    assert told == [*NAMING["B"], *NAMING["C"]]
    assert all(row["topic"] is None for row in out if row["source"] == "brand")
    asked = [row for row in out if row["topic"] == job.config.fanout_topic]
    assert [FanoutRequest.from_bytes(row["value"]).id for row in asked] == ["A"]
    counts = {row["name"]: row["amount"] for row in out if row["name"]}
    assert counts[names.FANOUT_ASKED] == 4 and counts[names.FANOUT_KEYS] == 4
    assert [row["k"] for row in out if row["source"] == "item"] == ["7"]


def test_slots_are_filled_after_one_lookup_of_the_rows_they_name(tmp_path: Path) -> None:
    job, out = _run(tmp_path, 5, _lookup("7", "B"), _lookup("8", "B"), _lookup("9", "Z"),
                    _lookup("10", None))  # fmt: skip

    assert job.items.lookups == [["B", "Z"]], "each row once, in one _mget"
    slots = {row["k"]: row for row in out if row["source"] == "brand"}
    assert all(row["source"] != LOOKUP_ROW for row in out), "the counter never sees one"
    assert {k: (s["ref"], s["ref_version"], s["deleted"]) for k, s in slots.items()} == {
        "7": ("B", 9, False), "8": ("B", 9, False),
        "9": ("Z", 0, True),  # a row not there: an empty slot, the key waits for it
        "10": (None, 0, True),  # names none
    }  # fmt: skip
    assert all(s["version"] == 5 and s["topic"] is None for s in slots.values())


def test_a_request_of_the_fan_out_topic_gets_a_page_now_and_goes_on_where_there_is_more(
    tmp_path: Path,
) -> None:
    topic = _job(tmp_path, 5).config.fanout_topic
    job, out = _run(tmp_path, 5, _fanout("A", 1, topic), _fanout("C", 2, topic))

    told = [row["k"] for row in out if row["source"] == "brand"]
    assert told == [*NAMING["A"][:5], *NAMING["C"]], "a page of A, all of C, in this batch"
    (again,) = [FanoutRequest.from_bytes(r["value"]) for r in out if r["topic"] == topic]
    assert (again.id, again.after, again.keys) == ("A", [NAMING["A"][4]], 5)
    assert job.items.searches == 2, "no count: a queued request is paged whatever its size"
