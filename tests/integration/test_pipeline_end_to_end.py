"""The whole pipeline against real Kafka, Elasticsearch and Spark, checked against the generator."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from tests.integration.pipelines import (
    consumer_lag,
    drop,
    enriched_docs,
    make_config,
    read_topic,
    run_pipeline,
    wait_until,
)

MALFORMED = [
    (b"{not json", "invalid JSON"),
    (b"[1, 2, 3]", "not a JSON object"),
    (b'{"amount": 3}', "missing key field 'entity_id'"),
    (b'{"entity_id": {"nested": 1}}', "must be a string or an integer"),
]


@pytest.fixture
def pipelines(settings: Settings, tmp_path: Path) -> Iterator[list[PipelineConfig]]:
    created: list[PipelineConfig] = []
    yield created
    for config in created:
        drop(config)


def _assert_joined(settings: Settings, config: PipelineConfig, expected: dict[str, Any]) -> None:
    ready = read_topic(settings, config.ready_topic)
    fired = Counter(key for key, _ in ready)
    assert set(fired) == set(expected), "every complete key fires, no incomplete key does"
    assert max(fired.values()) == 1, "no key fires twice"
    assert all(event["sources"] == sorted(config.source_names) for _, event in ready)

    docs = enriched_docs(settings, config)
    assert set(docs) == set(expected)
    for key, doc in docs.items():
        fusion = doc.pop("fusion")
        assert doc == expected[key]
        assert set(fusion["versions"]) == set(config.source_names)

    on_topic = Counter(key for key, _ in read_topic(settings, config.enriched_topic))
    assert on_topic == Counter(set(expected)), "the enriched topic has each key exactly once"


@pytest.mark.parametrize("engine", ["jvm", "python"])
def test_four_sources_batched_with_duplicates_missing_parts_and_bad_records(
    spark: Any, settings: Settings, tmp_path: Path, pipelines: list[PipelineConfig], engine: str
) -> None:
    config = make_config(
        settings, tmp_path, ["billing", "insurance", "medicine", "treatment"], counter_engine=engine
    )
    pipelines.append(config)
    data = build_dataset(
        config, GenOptions(keys=150, seed=11, duplicate_rate=0.2, missing_rate=0.15)
    )
    bad_topic = config.topic_of(config.sources[0])
    pipeline_bad = [(bad_topic, f"bad-{i}", value) for i, (value, _) in enumerate(MALFORMED)]
    kafka_topics.ensure_topics(config)
    produce(config, data.records + pipeline_bad)

    # The default layout: one query indexes, counts and enriches.
    assert config.pipeline.layout == "single"
    metrics = run_pipeline(
        spark,
        config,
        done=lambda m: (
            m.get("enricher.enriched") >= len(data.expected) and m.total(".dlq") >= len(MALFORMED)
        ),
    )

    _assert_joined(settings, config, data.expected)
    dead = [letter for _, letter in read_topic(settings, config.dlq_topic)]
    reasons = [letter["reason"] for letter in dead]
    for value, reason in MALFORMED:
        match = [d for d in dead if d["original"] == value.decode()]
        assert len(match) == 1 and reason in match[0]["reason"], (value, reasons)
        assert match[0]["source"] == "billing" and match[0]["topic"] == bad_topic
    assert metrics.get("counter.keys") - metrics.get("counter.fired") == len(data.missing)
    # One _mget per micro-batch chunk instead of N lookups per key.
    assert metrics.get("enricher.es_requests") <= math.ceil(len(data.expected) / 10)


def test_two_sources_per_source_lookup_costs_n_per_key_and_restart_does_not_refire(
    spark: Any, settings: Settings, tmp_path: Path, pipelines: list[PipelineConfig]
) -> None:
    # The layout of one query per stage, its acks on a topic: the restart recounts them.
    config = make_config(
        settings, tmp_path, ["orders", "payments"], lookup="per-source", layout="stages"
    )
    pipelines.append(config)
    data = build_dataset(config, GenOptions(keys=60, seed=5, duplicate_rate=0.3, missing_rate=0.2))
    kafka_topics.ensure_topics(config)
    produce(config, data.records)

    metrics = run_pipeline(
        spark, config, done=lambda m: m.get("enricher.enriched") >= len(data.expected)
    )

    _assert_joined(settings, config, data.expected)
    assert metrics.get("enricher.es_requests") == 2 * len(data.expected)

    # Same checkpoints, every record sent again: the state says these keys fired already.
    acks_before = len(read_topic(settings, config.acks_topic))
    produce(config, data.records)
    again = run_pipeline(
        spark,
        config,
        done=lambda m: m.get("input.counter") > 0 and _caught_up(config),
        idle_limit=120,
    )
    resent = len(read_topic(settings, config.acks_topic)) - acks_before
    # Every distinct record was indexed and acked again (a newer version)...
    assert resent >= len({(topic, key) for topic, key, _ in data.records})
    # ...the counter read every one of those acks (Spark reports a batch's progress right
    # after the batch) and updated each key's state...
    wait_until(lambda: again.get("input.counter") == resent, [], 30, "the counter's progress")
    assert again.get("state.counter.updated") >= len({key for _, key, _ in data.records})
    # ...and fired none of them again, nor called the unchanged content an update.
    assert (again.get("counter.fired"), again.get("counter.updated")) == (0, 0)
    assert again.get("enricher.enriched") == 0
    _assert_joined(settings, config, data.expected)


def _caught_up(config: PipelineConfig) -> bool:
    """Every query of the run committed a batch and has read its topics to the end.

    The run's queries: one indexer for every source and the counter (which
    enriches); the per-source indexers (``--only indexer:<name>``) never run here."""
    lag = consumer_lag(config)
    ran = {stage: behind for stage, behind in lag.items() if not stage.startswith("indexer-")}
    return set(ran) == {"indexers", "counter"} and all(behind == 0 for behind in ran.values())


def test_six_sources(
    spark: Any, settings: Settings, tmp_path: Path, pipelines: list[PipelineConfig]
) -> None:
    names = ["crm", "erp", "web", "mobile", "support", "billing"]
    config = make_config(settings, tmp_path, names)
    pipelines.append(config)
    data = build_dataset(config, GenOptions(keys=80, seed=9, duplicate_rate=0.1, missing_rate=0.1))
    kafka_topics.ensure_topics(config)
    produce(config, data.records)

    run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") >= len(data.expected))

    _assert_joined(settings, config, data.expected)
