from __future__ import annotations

import copy

from fusion.enricher.document import ChildRows, FoundDoc, build_enriched, missing_sources
from fusion.enricher.spec import enrich_spec


def test_enriched_document_shape() -> None:
    found = {
        "insurance": FoundDoc({"txn_id": "T-1", "provider": "AXA"}, 3),
        "billing": FoundDoc({"txn_id": "T-1", "amount": 12.5}, 1),
    }

    doc = build_enriched("txn_id", "T-1", found, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z")

    assert doc == {
        "txn_id": "T-1",
        "billing": {"txn_id": "T-1", "amount": 12.5},
        "insurance": {"txn_id": "T-1", "provider": "AXA"},
        "fusion": {
            "fired_at": "2026-01-01T00:00:00Z",
            "enriched_at": "2026-01-01T00:00:01Z",
            "complete": True,
            "missing": [],
            "versions": {"billing": 1, "insurance": 3},
        },
    }


def test_a_partial_document_says_what_it_lacks() -> None:
    found = {"billing": FoundDoc({"txn_id": "T-1", "amount": 12.5}, 4)}

    doc = build_enriched("txn_id", "T-1", found, "a", "b", missing=["treatment", "insurance"])

    assert doc["fusion"]["complete"] is False
    assert doc["fusion"]["missing"] == ["insurance", "treatment"]
    assert "insurance" not in doc


def test_source_documents_are_copied_not_shared() -> None:
    record = {"txn_id": "T-1", "nested": {"x": 1}}
    found = {"billing": FoundDoc(record, 1), "insurance": FoundDoc({"txn_id": "T-1"}, 1)}
    before = copy.deepcopy(record)

    doc = build_enriched("txn_id", "T-1", found, "a", "b")
    doc["billing"]["nested"]["x"] = 99

    assert record == before


def test_missing_sources_in_config_order() -> None:
    found = {"billing": FoundDoc({}, 1)}

    assert missing_sources(found, ["billing", "insurance", "medicine"]) == ["insurance", "medicine"]


def test_the_key_a_source_document_keeps_is_not_nested_in_the_enriched_one() -> None:
    from fusion.core.config import PipelineConfig
    from fusion.enricher.lookups import _found

    config = PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id"},
            "sources": [{"name": "a"}, {"name": "b", "key": "record_key"}],
        }
    )
    stored = {"_source": {"total": 3, "fusion": {"key": "K1"}}, "_version": 4}
    assert _found(enrich_spec(config).sources[1], stored).source == {"total": 3}
    mine = {"_source": {"total": 3, "fusion": {"key": "K1", "x": 1}}, "_version": 4}
    assert _found(enrich_spec(config).sources[1], mine).source == {"total": 3, "fusion": {"x": 1}}
    # A source keyed by a top-level field keeps what it holds, its own "fusion" too.
    assert _found(enrich_spec(config).sources[0], mine).source == mine["_source"]


def test_children_are_an_array_under_their_source_and_a_cut_one_says_so() -> None:
    found = {"orders": FoundDoc({"id": 7, "total": 3}, 2, record_ms=1_000)}
    lines = ChildRows([{"line_id": 1}, {"line_id": 2}], record_ms=5_000)
    cut = ChildRows([{"note_id": 9}], left_out=4)
    arrays = {"lines": lines, "notes": cut, "empty": ChildRows()}

    doc = build_enriched("order_id", "7", found, "a", "b", arrays=arrays)

    assert doc["lines"] == [{"line_id": 1}, {"line_id": 2}] and doc["empty"] == []
    assert doc["fusion"]["truncated"] == {"notes": 4}
    # What reconcile compares with the children's aggregation: rows, and the latest one's time.
    assert doc["fusion"]["children"] == {
        "empty": {"rows": 0, "last_ms": None},
        "lines": {"rows": 2, "last_ms": 5_000},
        "notes": {"rows": 5, "last_ms": None},
    }
    assert doc["fusion"]["versions"] == {"orders": 2}  # arrays count through their changes
    # A line's record is the latest part: the key's latency starts there.
    assert doc["fusion"]["last_record_at"] == "1970-01-01T00:00:05.000000Z"
    assert "truncated" not in build_enriched("order_id", "7", found, "a", "b")["fusion"]
