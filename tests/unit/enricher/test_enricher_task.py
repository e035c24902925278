"""The enricher task's pure steps: reading events, and enriched records that fit a message."""

from __future__ import annotations

import json
import time

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.events import DeadLetter, dumps, iso_from_ms
from fusion.elastic.bulk import Confirmed
from fusion.enricher.groups import GroupSizer
from fusion.enricher.request import EnrichRequest, parse_event
from fusion.enricher.spec import enrich_spec
from fusion.enricher.task import EnrichedDoc, enriched_records

CONFIG = PipelineConfig.model_validate(
    {
        "pipeline": {"name": "p", "key_field": "id", "max_record_bytes": 10_000},
        "sources": [{"name": "a"}, {"name": "b"}],
    }
)
WHERE = ("p.ready", 1, 42)
GOOD = {"key": "K1", "sources": ["a", "b"], "first_ack_at": "2026-01-01T00:00:00Z"}


def test_a_ready_event_as_fusion_writes_it_is_read() -> None:
    event = GOOD | {"fired_at": "2026-01-01T00:00:01.5Z"}

    wanted = parse_event(CONFIG.incomplete_topic, json.dumps(event).encode(), WHERE)

    assert (
        isinstance(wanted, EnrichRequest)
        and wanted.key == "K1"
        and wanted.fired_at == event["fired_at"]
    )


@pytest.mark.parametrize(
    "fired_at", [1767225600000, "1767225600000", "2026-01-01", "2026-01-01T00:00:00", "soon"]
)
def test_a_timestamp_elasticsearch_takes_but_fusion_cannot_use_is_a_dead_letter(
    fired_at: object,
) -> None:
    value = json.dumps(GOOD | {"fired_at": fired_at}).encode()

    letter = parse_event(CONFIG.incomplete_topic, value, WHERE)

    assert isinstance(letter, DeadLetter)
    assert letter.reason.startswith("malformed ready event: fired_at: ")
    assert (letter.stage, letter.key, letter.topic, letter.offset) == (
        "enricher",
        "K1",
        "p.ready",
        42,
    )


def _confirmed(key: str, size: int) -> Confirmed[EnrichedDoc]:
    fired_at = "2026-01-01T00:00:00Z"
    body = dumps({"id": key, "a": {"text": "x" * size}, "fusion": {"fired_at": fired_at}})
    record = EnrichedDoc(key, body, fired_at, WHERE, b'{"key": "%s"}' % key.encode())
    return Confirmed(record, "p-enriched", 1, 1, 1)


def test_an_enriched_document_too_large_for_a_message_becomes_a_dead_letter() -> None:
    # message_limit: three records of 10,000 bytes plus 64 KiB of headroom.
    small, large = _confirmed("K1", 1_000), _confirmed("K2", CONFIG.message_limit)

    records, dead = enriched_records(enrich_spec(CONFIG), [small, large])

    assert [key for _, key, _ in records] == ["K1"]
    (letter,) = dead
    assert letter.key == "K2" and letter.stage == "enricher"
    assert f"exceeds the {CONFIG.message_limit}-byte message limit of p.enriched" in letter.reason
    assert "it is in p-enriched" in letter.reason


def test_groups_of_keys_are_sized_by_what_their_documents_weighed() -> None:
    config = CONFIG.model_copy(
        update={"pipeline": CONFIG.pipeline.model_copy(update={"task_chunk_bytes": 100_000})}
    )
    sizer = GroupSizer.of(enrich_spec(config))
    sizer.name = "test-groups"  # its own estimate, whatever ran in this process before
    # Nothing seen yet: every source could be max_record_bytes (2 x 10,000 here).
    assert sizer.keys() == 5
    sizer.observe(5, 5 * 400)
    assert sizer.keys() == 250  # 100,000 / 400
    # Another task of the same worker starts from what the last group weighed.
    again = GroupSizer(sizer.name, 100_000, sizer.worst)
    assert again.keys() == 250
    again.observe(250, 250 * 50_000)  # larger than a key can be: the worst case bounds it
    assert again.keys() == 5
    again.observe(3, 0)  # a group that wrote nothing tells nothing
    assert again.keys() == 5


def test_a_keys_latency_starts_at_its_latest_parts_record_and_the_document_says_when() -> None:
    from fusion.enricher.document import build_enriched
    from fusion.enricher.latency import observe_latencies
    from fusion.enricher.lookups import _found
    from fusion.observe import sketch
    from fusion.observe.metrics import Metrics

    config = PipelineConfig.model_validate(
        {"pipeline": {"name": "p", "key_field": "id"}, "sources": [{"name": "a"}, {"name": "b"}]}
    )
    now_ms = int(time.time() * 1000)
    hits = {
        "a": {"_source": {"id": "k", "x": 1, "fusion": {"ts": now_ms - 9_000}}, "_version": 3},
        "b": {"_source": {"id": "k", "y": 2, "fusion": {"ts": now_ms - 4_000}}, "_version": 5},
    }
    spec = enrich_spec(config)
    found = {name: _found(spec.source(name), hit) for name, hit in hits.items()}

    doc = build_enriched("id", "k", found, "2026-11-27T10:00:00Z", "2026-11-27T10:00:01Z")
    metrics = Metrics()
    observe_latencies(metrics, [EnrichedDoc("k", b"", "2026-11-27T10:00:00Z", ("t", 0, 1), b"",
                                            last_record_ms=now_ms - 4_000)], 3.0)  # fmt: skip

    # Fusion's timestamp is no part of the parts; the document names the latest one.
    assert doc["a"] == {"id": "k", "x": 1} and doc["b"] == {"id": "k", "y": 2}
    assert doc["fusion"]["last_record_at"] == iso_from_ms(now_ms - 4_000)
    p50 = sketch.quantiles(metrics.counts())["p50"]
    assert p50 is not None and 4.0 * 0.99 <= p50 <= 4.5  # from b's record, not a's, nor the fire
    # Over an objective of 3 s, not over one of 5 s.
    assert metrics.get("latency.over_objective") == 1
    observe_latencies(metrics, [EnrichedDoc("k", b"", "2026-11-27T10:00:00Z", ("t", 0, 1), b"",
                                            last_record_ms=now_ms - 4_000)], 5.0)  # fmt: skip
    assert metrics.get("latency.over_objective") == 1
