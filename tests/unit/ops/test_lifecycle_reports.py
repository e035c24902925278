"""The pure parts of explain, status and reconcile."""

from __future__ import annotations

from fusion.core.config import PipelineConfig
from fusion.counter.decisions import Rules
from fusion.counter.key_state import KeyState, Seen
from fusion.counter.state import StateSummary
from fusion.enricher.document import FoundDoc
from fusion.ops import explain, status
from fusion.ops.reconcile_slice import needs_enrichment

CONFIG = PipelineConfig.model_validate(
    {
        "pipeline": {"name": "visits", "key_field": "visit_id", "timeout": "20s"},
        "sources": [
            {"name": "billing"},
            {"name": "insurance"},
            {"name": "notes", "required": False},
        ],
    }
)


def state(*sources: str, fired: str | None = None, expired: str | None = None) -> KeyState:
    seen = {s: Seen(3, "d", "2026-01-01T00:00:01Z") for s in sources}
    return KeyState(seen, "2026-01-01T00:00:01Z", 1_000, fired, expired)


def test_explain_a_key_waiting_for_a_required_source_gives_its_deadline() -> None:
    evidence = explain.Evidence("K", {"billing": FoundDoc({}, 3)}, None, state("billing"))

    report = explain.explain(CONFIG, evidence)

    assert report["verdict"] == "waiting"
    assert report["counter"]["deadline_at"] == "1970-01-01T00:00:21.000000Z"
    assert "['insurance', 'notes']" in report["why"]


def test_explain_a_key_complete_in_elasticsearch_but_unknown_to_the_counter_is_lost() -> None:
    docs = {"billing": FoundDoc({}, 1), "insurance": FoundDoc({}, 2)}

    report = explain.explain(CONFIG, explain.Evidence("K", docs, None, None))

    assert report["verdict"] == "lost" and "fusion reconcile" in report["why"]


def test_explain_an_enriched_document_older_than_its_sources() -> None:
    docs = {"billing": FoundDoc({}, 5), "insurance": FoundDoc({}, 2)}
    enriched = {"fusion": {"complete": True, "versions": {"billing": 1, "insurance": 2}}}

    report = explain.explain(CONFIG, explain.Evidence("K", docs, enriched, state("billing")))

    assert report["verdict"] == "enriched"
    assert report["enriched"]["up_to_date"] is False
    assert "older source versions" in report["why"]


def test_status_counts_pending_keys_by_missing_source() -> None:
    states = [
        state("billing"),
        state("billing", "notes"),
        state("insurance"),
        state("billing", "insurance", fired="t"),
        state("billing", expired="t"),
    ]
    metrics = {"counters": {"indexer.billing.indexed": 4, "counter.fired": 1}, "alerts": {}}

    summary = StateSummary.of(states, Rules.of(CONFIG))
    inputs = status.Inputs(metrics, {"counter": 0}, {"billing": None}, summary)
    report = status.build(CONFIG, inputs)

    assert report["counter"]["pending_keys"] == 3
    assert report["counter"]["pending_by_missing_source"] == {
        "billing": 1,
        "insurance": 2,
        "notes": 2,
    }
    assert report["sources"]["billing"]["indexed"] == 4
    assert report["sources"]["billing"]["lag"] is None  # that indexer never ran
    assert "pending keys 3, missing: billing 1, insurance 2, notes 2" in status.render(report)


def test_reconcile_picks_complete_keys_without_a_current_enriched_document() -> None:
    required = ["billing", "insurance"]

    assert needs_enrichment(required, {"billing": 1, "insurance": 1}, None)
    assert needs_enrichment(required, {"billing": 4, "insurance": 1, "notes": 2}, 5)
    assert not needs_enrichment(required, {"billing": 4, "insurance": 1}, 5)
    assert not needs_enrichment(required, {"billing": 4, "notes": 1}, None)
    # A required source's row deleted (its tombstone): not complete, nothing to enrich.
    assert not needs_enrichment(required, {"billing": 4, "insurance": 2}, None, {"insurance"})
    # An optional one deleted: its tombstone's version counts, as the enricher sums it.
    assert not needs_enrichment(required, {"billing": 4, "insurance": 1, "notes": 3}, 8, {"notes"})
