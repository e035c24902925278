"""`fusion reconcile` with dimensions: a page's stale keys are asked of the counter (pure: a dict
of indexes stands in for Elasticsearch's ``_mget``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from acks import Ack
from fusion.elastic.retry import RetryPolicy
from fusion.enricher.spec import EnrichSpec
from fusion.observe.metrics import Metrics
from fusion.ops.reconcile_ask import AskSpec, _page
from fusion.ops.reconcile_slice import PLANNED, UP_TO_DATE
from tests.unit.core.test_config_dimensions import _load
from tests.unit.indexers.test_chains import CHAIN, DOCS, _Indexes


@dataclass(frozen=True)
class _Enrich(EnrichSpec):
    indexes_es: Any = None

    def es(self) -> Any:
        return self.indexes_es


def _spec(tmp_path: Path, docs: dict[str, Any]) -> AskSpec:
    spec = AskSpec.of(_load(tmp_path, CHAIN))
    enrich = _Enrich(**{f.name: getattr(spec.enrich, f.name) for f in fields(spec.enrich)})
    return replace(spec, enrich=replace(enrich, indexes_es=_Indexes(docs)))


def test_a_key_enriched_from_older_rows_or_not_at_all_is_asked_for(tmp_path: Path) -> None:
    stock = {k: (5, {"item_id": k}) for k in ("7", "8", "9")}
    enriched = {
        # 7: built from what is there now (item 10, brand B at 50, company C at 70).
        "7": (
            3,
            {"fusion": {"versions": {"item": 10, "stock": 5, "brand": 50, "brand/company": 70}}},
        ),
        # 8: from company C before its rename.
        "8": (
            3,
            {"fusion": {"versions": {"item": 11, "stock": 5, "brand": 50, "brand/company": 69}}},
        ),
    }  # 9: no enriched document at all
    spec = _spec(tmp_path, DOCS | {"cat-stock": stock, "cat-enriched": enriched})
    records, counts = _page(spec, ["7", "8", "9"], (RetryPolicy(), Metrics()))
    assert (counts[UP_TO_DATE], counts[PLANNED]) == (1, 2)
    acks = [Ack.from_bytes(value) for topic, _, value in records]
    assert {topic for topic, _, _ in records} == {"cat.slots"}
    by_key = {key: [a.source for a in acks if a.key == key] for key in ("7", "8", "9")}
    # Each stale key: its parts' acks, its slots' as the indexer gives them, then the ask.
    assert by_key == {
        "7": [],
        "8": ["item", "stock", "brand", "brand/company", "fusion"],
        "9": ["item", "stock", "brand", "brand/company", "fusion"],
    }
    chain = next(a for a in acks if a.key == "8" and a.source == "brand/company")
    assert (chain.version, chain.via, chain.ref, chain.ref_version) == (11, (50,), "C", 70)
    assert json.loads(records[-1][2])["source"] == "fusion"
