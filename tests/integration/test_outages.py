"""Outages mid-run: Elasticsearch stopped for 30 s, the Kafka broker restarted.

The session's own servers are stopped and started again (local launcher), so
these tests run against exactly the servers every other test uses. The
pipeline must keep running through the outage, say so in its status line,
publish no ack for data Elasticsearch did not index, and end with nothing lost
and nothing fired twice.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion import pipeline, topology
from fusion.config import PipelineConfig
from fusion.generator import Dataset, GenOptions, build_dataset, produce
from fusion.settings import Settings
from tests.integration.conftest import ServerControl
from tests.integration.pipelines import (
    RunningPipeline,
    drop,
    enriched_docs,
    make_config,
    read_topic,
)

ES_OUTAGE_SECONDS = 30.0


@pytest.fixture
def config(settings: Settings, tmp_path: Path) -> Iterator[PipelineConfig]:
    config = make_config(settings, tmp_path, ["orders", "payments"])
    topology.ensure_topics(config)
    yield config
    drop(config)


def _waves(config: PipelineConfig) -> tuple[Dataset, list[Any], list[Any]]:
    data = build_dataset(config, GenOptions(keys=60, seed=8, duplicate_rate=0.1, missing_rate=0))
    early = set(sorted(data.expected)[:30])
    first = [r for r in data.records if r[1] in early]
    second = [r for r in data.records if r[1] not in early]
    return data, first, second


def _run_first_wave(run: RunningPipeline, records: list[Any]) -> None:
    produce(run.config, records)
    run.wait_for(lambda: run.metrics.get("enricher.enriched") == 30, 120, "the first wave")


def _assert_nothing_lost(settings: Settings, config: PipelineConfig, data: Dataset) -> None:
    ready = Counter(key for key, _ in read_topic(settings, config.ready_topic))
    assert ready == Counter(set(data.expected)), "each key fired exactly once"
    docs = enriched_docs(settings, config)
    assert set(docs) == set(data.expected)
    for key, doc in docs.items():
        doc.pop("fusion")
        assert doc == data.expected[key]
    assert read_topic(settings, config.dlq_topic) == []


def test_elasticsearch_stopped_for_30_seconds_mid_run(
    spark: Any, settings: Settings, config: PipelineConfig, server_control: ServerControl
) -> None:
    data, first, second = _waves(config)
    with RunningPipeline(spark, config) as run:
        _run_first_wave(run, first)
        acks_before = run.metrics.total(".acks")

        server_control.stop("elasticsearch")
        stopped = time.monotonic()
        try:
            produce(config, second)
            run.wait_for(
                lambda: "Elasticsearch unavailable" in pipeline.status_line(run.metrics),
                60,
                "the status line to report the outage",
            )
            # The outage lasts its 30 s; the queries must stay up all along.
            run.wait_for(lambda: time.monotonic() - stopped >= ES_OUTAGE_SECONDS, 60, "the outage")
            assert run.metrics.total(".acks") == acks_before, "no ack for unindexed data"
        finally:
            server_control.start()

        run.wait_for(lambda: run.metrics.get("enricher.enriched") == 60, 240, "the second wave")
        assert run.metrics.get("es.retries") > 0
        assert "Elasticsearch unavailable" not in pipeline.status_line(run.metrics)
    _assert_nothing_lost(settings, config, data)


def test_kafka_broker_restarted_mid_run(
    spark: Any, settings: Settings, config: PipelineConfig, server_control: ServerControl
) -> None:
    data, first, second = _waves(config)
    with RunningPipeline(spark, config) as run:
        _run_first_wave(run, first)

        server_control.stop("kafka")
        server_control.start()
        produce(config, second)

        run.wait_for(lambda: run.metrics.get("enricher.enriched") == 60, 240, "the second wave")
    _assert_nothing_lost(settings, config, data)
