"""Slot acks along a chain, item → brand → company, from both writers (pure: a dict of
indexes stands in for Elasticsearch, searched and looked up as it answers)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acks import Ack, FanoutRequest
from fusion.core.config import PipelineConfig
from fusion.elastic.bulk import Confirmed
from fusion.observe import names
from fusion.observe.metrics import Metrics
from indexers.dimensions.chains import written_slot_acks
from indexers.dimensions.fanout import fan_out, requests_for, work_pages
from indexers.records import RawRecord, SourceRecord
from indexers.spec import IndexSpec, index_spec
from tests.unit.core.test_config_dimensions import _load

CHAIN = """
[pipeline]
name = "cat"
key_field = "item_id"

[[sources]]
name = "item"
key = "id"
references = { brand = "brand_id" }

[[sources]]
name = "stock"
key = "item_id"

[[sources]]
name = "brand"
dimension = true
key = "id"
references = { company = "company_id" }

[[sources]]
name = "company"
dimension = true
key = "id"
"""
AT = datetime(2026, 1, 1, tzinfo=UTC)


class _Indexes:
    """Documents by index and id: ``_mget`` by id, ``term`` searches on ``fusion.refs``."""

    def __init__(self, docs: dict[str, dict[str, tuple[int, dict[str, Any]]]]) -> None:
        self.docs = docs

    def mget(self, *, docs: list[dict[str, str]]) -> dict[str, Any]:
        out = []
        for d in docs:
            found = self.docs.get(d["_index"], {}).get(d["_id"])
            hit = {"_id": d["_id"], "found": found is not None}
            if found is not None:
                hit |= {"_version": found[0], "_source": found[1]}
            out.append(hit)
        return {"docs": out}

    def search(self, *, index: str, query: Any, size: int, **more: Any) -> dict[str, Any]:
        ((field, value),) = query["term"].items()
        name = field.removeprefix("fusion.refs.")
        after = more["search_after"]
        hits = [
            {"_id": i, "_version": v, "sort": [i]}
            for i, (v, doc) in sorted(self.docs[index].items())
            if doc.get("fusion", {}).get("refs", {}).get(name) == value
            and (after is None or i > after[0])
        ]
        return {"hits": {"hits": hits[:size]}}


@dataclass(frozen=True)
class _Spec(IndexSpec):
    indexes_es: _Indexes

    def es(self) -> Any:
        return self.indexes_es


def _spec(config: PipelineConfig, docs: _Indexes) -> _Spec:
    spec = index_spec(config, config.source_names)
    return _Spec(**{f.name: getattr(spec, f.name) for f in fields(spec)}, indexes_es=docs)


def _doc(refs: dict[str, str], **values: Any) -> dict[str, Any]:
    return {**values, "fusion": {"refs": refs}}


DOCS = {
    "cat-item": {
        "7": (10, _doc({"brand": "B"}, id="7")),
        "8": (11, _doc({"brand": "B"}, id="8")),
        "9": (12, _doc({"brand": "X"}, id="9")),
    },
    "cat-brand": {
        "B": (50, _doc({"company": "C"}, name="Bolt")),
        "X": (51, _doc({}, name="Xeno")),  # names no company
    },
    "cat-company": {"C": (70, {"name": "Corp"}), "D": (3, {"name": "Dyne"})},
}


def _by_slot(acks: list[Ack]) -> dict[tuple[str, str], tuple[Any, ...]]:
    return {(a.key, a.source): (a.version, a.via, a.ref, a.ref_version, a.deleted) for a in acks}


def test_an_items_write_acks_its_brand_and_the_company_its_brand_names(tmp_path: Path) -> None:
    config = _load(tmp_path, CHAIN)
    assert config.slots == ("brand", "brand/company")
    spec = _spec(config, _Indexes(DOCS))
    items = [
        Confirmed(SourceRecord(k, {}, "item", 0, v - 1, b"", "d", refs=refs), "cat-item", 1, 1, v)
        for k, v, refs in [("7", 10, {"brand": "B"}), ("9", 12, {"brand": "X"})]
    ]
    acks = written_slot_acks(spec, spec.sources["item"].slots, items, Metrics())
    assert _by_slot(acks) == {
        ("7", "brand"): (10, (), "B", 50, False),
        ("7", "brand/company"): (10, (50,), "C", 70, False),
        ("9", "brand"): (12, (), "X", 51, False),
        ("9", "brand/company"): (12, (51,), None, 0, True),  # brand X names no company
    }


def _request(dimension: str, id: str, version: int, through: str, **refs: str) -> Any:
    made = FanoutRequest(
        dimension=dimension, id=id, version=version, digest="d", requested_at=AT,
        reference=through, refs=refs,
    )  # fmt: skip
    return (made, ("cat.fanout", 0, 1), 100)


def test_a_companys_change_reaches_the_items_of_each_brand_naming_it(tmp_path: Path) -> None:
    spec = _spec(_load(tmp_path, CHAIN), _Indexes(DOCS))
    assert spec.naming["company"] == ("brand/company",)
    # First the brands naming company C, each a request one hop nearer the items.
    first = work_pages(spec, [_request("company", "C", 71, "brand/company")], Metrics())
    assert first.acks == []
    ((nearer),) = first.nearer
    assert (nearer.hop, nearer.row, nearer.between) == (0, "B", [50])
    # Then the items naming brand B: each told of C at its new version, through B at 50.
    second = work_pages(spec, [(nearer, ("cat.fanout", 0, 2), 100)], Metrics())
    assert _by_slot(second.acks) == {
        ("7", "brand/company"): (10, (50,), "C", 71, False),
        ("8", "brand/company"): (11, (50,), "C", 71, False),
    }


def test_the_brands_found_up_a_chain_count_as_fan_outs_pending_in_status(
    tmp_path: Path,
) -> None:
    spec = _spec(_load(tmp_path, CHAIN), _Indexes(DOCS))
    request, _, _ = _request("company", "C", 71, "brand/company")

    out, counts = fan_out(spec, [RawRecord(request.to_bytes(), "cat.fanout", 0, 5)])

    assert [FanoutRequest.from_bytes(v).row for t, _, v in out if t == spec.outputs.fanout] == ["B"]
    # Read one, made one: brand B's request waits on the topic, one pending.
    assert counts[names.FANOUT_REQUESTS] == 1 and counts[names.FANOUT_CONTINUED] == 1


def test_a_brand_moved_to_another_company_tells_its_items_of_both_rows(tmp_path: Path) -> None:
    spec = _spec(_load(tmp_path, CHAIN), _Indexes(DOCS))
    # Brand B, written at version 60, now names company D (written long before C).
    moved = work_pages(spec, [_request("brand", "B", 60, "brand", company="D")], Metrics())
    assert _by_slot(moved.acks) == {
        ("7", "brand"): (10, (), "B", 60, False),
        ("7", "brand/company"): (10, (60,), "D", 3, False),
        ("8", "brand"): (11, (), "B", 60, False),
        ("8", "brand/company"): (11, (60,), "D", 3, False),
    }
    # A brand's request carries what the written row names.
    row = SourceRecord("B", {}, "brand", 0, 59, b"", "d", refs={"company": "D"})
    ((request, _),) = requests_for("brand", ["brand"], [Confirmed(row, "b", 1, 1, 60)], AT)
    assert request.refs == {"company": "D"}


def test_the_enriched_item_holds_the_company_inside_its_brand(tmp_path: Path) -> None:
    import json

    from fusion.elastic.indexes import enriched_mapping
    from fusion.enricher.document import FoundDoc, enriched_json

    brand = {"name": "Bolt", "company_id": "C"}
    found = {
        "item": FoundDoc({"id": "7"}, 10),
        "brand": FoundDoc(brand, 50),
        "brand/company": FoundDoc({"name": "Corp"}, 70),
    }
    doc = json.loads(enriched_json("item_id", "7", found, "t", "t"))
    assert doc["brand"] == {"name": "Bolt", "company_id": "C", "company": {"name": "Corp"}}
    assert brand == {"name": "Bolt", "company_id": "C"}, "the shared row itself is untouched"
    assert doc["fusion"]["versions"] == {"brand": 50, "brand/company": 70, "item": 10}
    # No brand: its company has nowhere to go.
    alone = {"item": found["item"], "brand/company": found["brand/company"]}
    lone = json.loads(enriched_json("item_id", "7", alone, "t", "t"))
    assert set(lone) == {"item_id", "item", "fusion"}
    mapping = enriched_mapping(_load(tmp_path, CHAIN))["properties"]
    assert mapping["brand"]["properties"]["company"]["type"] == "object"
    assert "company" not in mapping
