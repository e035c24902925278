"""A fan-out's pages: a dimension's task works its rows' first pages within one page's keys,
the fan-out topic's task a page per request (pure: the search stands in for Elasticsearch)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acks.fanout import FanoutRequest
from fusion.elastic.bulk import Confirmed
from fusion.observe import names
from fusion.observe.metrics import Metrics
from indexers.dimensions.fanout import work_pages
from indexers.dimensions.written import first_pages
from indexers.records import SourceRecord
from indexers.spec import IndexSpec, index_spec
from tests.unit.core.test_config_dimensions import ITEMS, _load

NAMING = {"A": [f"i{n:02d}" for n in range(7)], "B": ["j1", "j2", "j3"], "C": ["k1"], "D": []}


class _Items:
    """The items' index as a ``term`` search sorted by key answers it, ``search_after`` too."""

    def __init__(self) -> None:
        self.searches = 0

    def search(self, *, query: Any, size: int, **more: Any) -> dict[str, Any]:
        self.searches += 1
        if "aggs" in more:  # how many keys name each row asked about
            (rows,) = query["terms"].values()
            counts = [{"key": r, "doc_count": len(NAMING[r])} for r in rows if NAMING[r]]
            return {"aggregations": {"naming": {"buckets": counts}}}
        (row,) = query["term"].values()
        search_after = more["search_after"]
        keys = [k for k in NAMING[row] if search_after is None or k > search_after[0]][:size]
        return {"hits": {"hits": [{"_id": k, "_version": 3, "sort": [k]} for k in keys]}}


@dataclass(frozen=True)
class _Spec(IndexSpec):
    items: _Items

    def es(self) -> Any:
        return self.items


def _spec(tmp_path: Path, page: int) -> _Spec:
    pipeline = ITEMS.replace("[pipeline]", f"[pipeline]\nfanout_page = {page}")
    config = _load(tmp_path, pipeline)
    spec = index_spec(config, config.source_names)
    return _Spec(**{f.name: getattr(spec, f.name) for f in fields(spec)}, items=_Items())


def _requests(*rows: str) -> list[tuple[FanoutRequest, Any]]:
    made = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        (FanoutRequest(dimension="brand", id=r, version=4, digest="d", requested_at=made),
         ("catalog.brand", 0, n))
        for n, r in enumerate(rows)
    ]  # fmt: skip


def test_the_fanout_topics_task_gives_each_request_a_page_of_its_own(tmp_path: Path) -> None:
    spec = _spec(tmp_path, page=2)

    pages = work_pages(spec, [(r, where, 2) for r, where in _requests("A", "C")], Metrics())

    assert [a.key for a in pages.acks] == ["i00", "i01", "k1"]
    assert [(r.id, r.after) for r in pages.again] == [("A", ["i01"])]


def test_a_dimensions_task_does_the_fan_outs_that_fit_and_asks_the_topic_for_the_rest(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path, page=8)
    rows = [
        Confirmed(SourceRecord(r, {"id": r}, "catalog.brand", 0, n, b"", "d"), "b", 1, 1, n + 1)
        for n, r in enumerate("ABCD")
    ]
    metrics = Metrics()

    out = first_pages(spec, "brand", rows, metrics)

    # A's 7 keys fit the page of 8, B's 3 no longer do, C's 1 does; D names no key: no search.
    told = [json.loads(v)["key"] for t, _, v in out if t == spec.outputs.slots]
    asked = [FanoutRequest.from_bytes(v) for t, _, v in out if t == spec.outputs.fanout]
    assert told == [*NAMING["A"], "k1"]
    assert [(r.id, r.after) for r in asked] == [("B", None)]
    assert spec.items.searches == 3  # the count, then A's page and C's
    assert metrics.get(names.FANOUT_ASKED) == 4 and metrics.get(names.FANOUT_DONE) == 3
    assert metrics.get(names.FANOUT_REQUESTS) == 3  # B waits on the topic: one pending
