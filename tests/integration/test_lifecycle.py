"""Key lifecycle against real servers: deadlines, partial documents, updates, explain, status.

One pipeline runs for the module with sources billing and insurance
(required) and notes (optional), ``timeout = "5s"`` and ``on_timeout =
"partial"``. The fixture drives a short story and keeps what happened; each
test checks one part of it:

- C1 gets every source: fires at once;
- O1 never gets the optional notes: fires when its deadline passes;
- E1 only ever gets billing: incomplete event + partial document;
- L1 gets billing, expires, then insurance arrives late: fires once, complete;
- U1 completes, then billing changes (and insurance is re-sent unchanged):
  one ``updated`` event, the enriched document rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.events import dumps
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.elastic.bulk import Target, write_documents
from fusion.elastic.retry import RetryPolicy
from fusion.enricher.task import EnrichedDoc
from fusion.observe.figures import Figures
from fusion.observe.metrics import Metrics
from fusion.ops import explain, status
from fusion.topology import topology_of
from tests.integration.pipelines import (
    RunningPipeline,
    consumer_lag,
    drop,
    enriched_docs,
    make_config,
    read_topic,
    source_record,
)


@dataclass
class Story:
    config: PipelineConfig
    metrics: Metrics
    first_enriched: dict[str, dict[str, Any]]  # before the late arrival and the update
    enriched: dict[str, dict[str, Any]]
    ready: list[tuple[str | None, Any]]
    updated: list[tuple[str | None, Any]]
    incomplete: list[tuple[str | None, Any]]
    enriched_topic: list[tuple[str | None, Any]]
    explained: dict[str, dict[str, Any]]
    status: dict[str, Any]


# The story runs on each counter engine: deadlines, late sources and updates are its.
@pytest.fixture(scope="module", params=["jvm", "python"])
def story(
    request: pytest.FixtureRequest,
    spark: Any,
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Story]:
    from fusion.bench.generator import produce

    config = make_config(
        settings,
        tmp_path_factory.mktemp("lifecycle"),
        ["billing", "insurance", "notes"],
        timeout="5s",
        on_timeout="partial",
        state_ttl="10m",
        counter_engine=request.param,
    )
    data = config.model_dump(mode="python")
    data["sources"][2]["required"] = False
    config = PipelineConfig.model_validate(data)
    both = ["billing", "insurance"]
    first_wave = [
        *(source_record(config, s, "C1", amount=1) for s in ["billing", "insurance", "notes"]),
        *(source_record(config, s, "O1", amount=2) for s in both),
        source_record(config, "billing", "E1", amount=3),
        source_record(config, "billing", "L1", amount=4),
        *(source_record(config, s, "U1", amount=5) for s in ["billing", "insurance", "notes"]),
    ]
    try:
        with RunningPipeline(spark, config) as run:
            m = run.metrics
            produce(config, first_wave)
            run.wait_for(
                lambda: m.get("enricher.enriched") >= 5 and m.get("counter.incomplete") >= 2,
                120,
                "C1, O1, U1 enriched, E1 and L1 expired with partial documents",
            )
            first = enriched_docs(settings, config)
            explained = {
                key: explain.explain(config, explain.gather(spark, config, key))
                for key in ["C1", "E1", "NOPE"]
            }
            produce(
                config,
                [
                    source_record(config, "insurance", "L1", amount=4),  # late, after L1's deadline
                    source_record(config, "billing", "U1", amount=50),  # changed content
                    source_record(config, "insurance", "U1", amount=5),  # re-sent, unchanged
                ],
            )
            run.wait_for(
                lambda: m.get("indexer.insurance.acks") >= 5 and m.get("enricher.updated") >= 1,
                120,
                "the late source and the update to go through",
            )
            run.wait_for(
                lambda: enriched_docs(settings, config)["L1"]["fusion"]["complete"],
                60,
                "L1's complete document",
            )
            counting = topology_of(config).counter_query
            run.wait_for(
                lambda: consumer_lag(config, counting)[counting] == 0,
                60,
                "the counter to decide every ack, the re-sent record's too",
            )
            report = status.build(config, status.gather(spark, config, m.snapshot()))
        yield Story(
            config,
            m,
            first,
            enriched_docs(settings, config),
            read_topic(settings, config.ready_topic),
            read_topic(settings, config.updates_topic),
            read_topic(settings, config.incomplete_topic),
            read_topic(settings, config.enriched_topic),
            explained,
            report,
        )
    finally:
        drop(config)


def keys_of(records: list[tuple[str | None, Any]]) -> list[str]:
    return sorted(key or "" for key, _ in records)


def test_complete_keys_fire_once_and_optional_sources_are_waited_for_until_the_deadline(
    story: Story,
) -> None:
    assert keys_of(story.ready) == ["C1", "L1", "O1", "U1"]
    o1 = story.enriched["O1"]
    assert o1["fusion"]["complete"] is True
    assert "notes" not in o1 and o1["billing"]["amount"] == 2
    assert story.enriched["C1"]["notes"]["amount"] == 1


def test_deadline_expiry_emits_one_incomplete_event_per_key(story: Story) -> None:
    events = {key: value for key, value in story.incomplete}
    assert keys_of(story.incomplete) == ["E1", "L1"]
    e1 = events["E1"]
    assert (e1["present"], e1["missing"]) == (["billing"], ["insurance", "notes"])
    assert e1["first_ack_at"] < e1["expired_at"]


def test_expired_keys_get_a_partial_document(story: Story) -> None:
    e1 = story.enriched["E1"]
    assert e1["fusion"]["complete"] is False
    assert e1["fusion"]["missing"] == ["insurance"]
    assert e1["billing"]["amount"] == 3 and "insurance" not in e1


def test_a_late_required_source_completes_the_key_exactly_once(story: Story) -> None:
    assert story.first_enriched["L1"]["fusion"]["complete"] is False
    l1 = story.enriched["L1"]
    assert l1["fusion"]["complete"] is True and l1["insurance"]["amount"] == 4
    assert [k for k, _ in story.ready].count("L1") == 1
    # Reported incomplete and then fired: counted back once, so it is not pending twice over.
    assert story.metrics.get("counter.fired_late") == 1


def test_an_update_emits_one_updated_event_and_rewrites_only_that_document(
    story: Story,
) -> None:
    assert keys_of(story.updated) == ["U1"]  # the unchanged re-send is no update
    (event,) = [value for _, value in story.updated]
    before, after = story.first_enriched["U1"], story.enriched["U1"]
    assert event["kind"] == "updated"
    assert after["billing"]["amount"] == 50 and before["billing"]["amount"] == 5
    assert after["fusion"]["versions"]["billing"] > before["fusion"]["versions"]["billing"]
    assert event["versions"]["billing"] == after["fusion"]["versions"]["billing"]
    assert [k for k, _ in story.ready].count("U1") == 1
    for key in ["C1", "O1"]:
        assert story.enriched[key] == story.first_enriched[key]


def test_a_stale_replay_never_overwrites_a_newer_enriched_document(
    story: Story, settings: Settings
) -> None:
    first, latest = story.first_enriched["U1"], story.enriched["U1"]
    version = sum(first["fusion"]["versions"].values())
    fired_at = first["fusion"]["fired_at"]
    old = EnrichedDoc("U1", dumps(first), fired_at, ("replay", 0, 0), b"", version)
    es = es_client.connect(story.config.elasticsearch)
    target = Target(story.config.enriched_index, "enricher", None, 100, False)

    written = write_documents(es, target, [old], RetryPolicy(budget_seconds=30), Metrics())

    assert [s.key for s in written.stale] == ["U1"] and not written.confirmed
    assert enriched_docs(settings, story.config)["U1"] == latest


def _event_of(events: list[tuple[str | None, Any]], key: str) -> dict[str, Any]:
    (event,) = [value for k, value in events if k == key]
    return dict(event)


def test_explain_a_complete_key(story: Story) -> None:
    report = story.explained["C1"]
    assert report["verdict"] == "enriched"
    assert all(s["in_elasticsearch"] and s["acked"] for s in report["sources"].values())
    # When the counter fired it: its ready event says the same.
    assert report["counter"]["fired_at"] == _event_of(story.ready, "C1")["fired_at"]
    assert report["enriched"]["up_to_date"] is True
    assert "C1" in explain.render(report) and "ENRICHED" in explain.render(report)


def test_explain_an_incomplete_key(story: Story) -> None:
    report = story.explained["E1"]
    assert report["verdict"] == "partial"
    assert report["counter"]["expired_at"] == _event_of(story.incomplete, "E1")["expired_at"]
    assert report["counter"]["missing"] == ["insurance", "notes"]
    assert report["sources"]["insurance"] == {
        "required": True,
        "in_elasticsearch": False,
        "version": None,
        "acked": False,
        "acked_version": None,
        "acked_at": None,
    }
    assert report["sources"]["billing"]["acked_at"] is not None


def test_explain_an_unknown_key(story: Story) -> None:
    report = story.explained["NOPE"]
    assert report["verdict"] == "unknown"
    assert report["counter"] is None and report["enriched"] is None
    assert "no source document" in explain.render(report)


def test_status_counts_every_stage(story: Story) -> None:
    report = story.status
    assert report["sources"]["billing"]["indexed"] == 6  # five keys, one update
    assert report["sources"]["insurance"]["acks"] == 5
    assert report["counter"]["fired"] == 4
    assert report["counter"]["incomplete"] == 2
    assert report["counter"]["updated"] == 1
    assert report["counter"]["keys_in_state"] == 5
    assert report["counter"]["pending_keys"] == 0
    assert report["counter"]["lag"] == 0
    assert report["enricher"]["partial"] == 2 and report["enricher"]["updated"] == 1
    # Requests per enriched document; a latency per document, from a sketch of a few %.
    figures = Figures(story.metrics.counts())
    enriched = report["enricher"]["enriched"]
    assert enriched > 0
    assert report["enricher"]["es_requests_per_key"] == round(
        report["enricher"]["es_requests"] / enriched, 4
    )
    p50, p99 = report["enricher"]["latency_p50_seconds"], report["enricher"]["latency_p99_seconds"]
    assert 0 < p50 <= p99 and report["enricher"]["latency_relative_error"] <= 0.05
    # One latency per enriched document written (deletes have none here).
    assert figures.latency()["count"] == enriched
    assert "pending keys 0" in status.render(report)


def test_a_deadline_pending_at_a_restart_fires_with_no_new_input(
    spark: Any, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A restart with a deadline pending: the clock reads the timers in the checkpoint
    (Spark's state reader, ``readRegisteredTimers``) and the key expires with no source
    input after the restart."""
    from fusion.bench.generator import produce

    config = make_config(
        settings, tmp_path_factory.mktemp("restart"), ["billing", "insurance"], timeout="8s"
    )
    try:
        with RunningPipeline(spark, config) as run:
            produce(config, [source_record(config, "billing", "R1", amount=1)])
            # Spark reports a batch's progress after committing it: the restart then
            # replays nothing.
            run.wait_for(
                lambda: any(p["numInputRows"] for p in run.queries[0].recentProgress),
                120,
                "R1's batch committed",
            )
        assert read_topic(settings, config.incomplete_topic) == []
        with RunningPipeline(spark, config) as again:
            again.wait_for(
                lambda: again.metrics.get("counter.incomplete") >= 1, 120, "R1's deadline"
            )
        [(key, event)] = read_topic(settings, config.incomplete_topic)
        assert key == "R1" and event["missing"] == ["insurance"]
    finally:
        drop(config)
