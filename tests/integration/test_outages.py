"""Outages mid-run: Elasticsearch down for 30 s; the Kafka broker down while a batch is published.

A Kafka and an Elasticsearch of this file's own are taken down and brought back
(:class:`~tests.integration.conftest.ServerControl`: stopped with the local
launcher, paused with testcontainers; with external servers the tests are
skipped and reported UNCHECKED at the end of the run): the session's serve the
tests running beside these. The pipeline must
notice (its status line says so), keep running through the outage, publish
no ack for data Elasticsearch did not index, and end with nothing lost and
nothing fired twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion import pipeline
from fusion.bench.generator import Dataset, GenOptions, build_dataset, produce
from fusion.core import faults
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from tests.integration.conftest import ServerControl
from tests.integration.pipelines import (
    RunningPipeline,
    assert_exact_join,
    drop,
    make_config,
    read_raw,
    worker_env,
)

ES_OUTAGE_SECONDS = 30.0
# Longer than a Kafka call of the executors' writer blocks (fusion.output.Writer.BLOCK_MS,
# 10 s): its publish loop must retry, not just wait the outage out.
KAFKA_OUTAGE_SECONDS = 15.0


@pytest.fixture(scope="module")
def settings(server_control: ServerControl) -> Settings:
    """Every test here runs on the servers it takes down."""
    return server_control.settings


@pytest.fixture
def config(settings: Settings, tmp_path: Path) -> Iterator[PipelineConfig]:
    # A request to a paused container hangs until its timeout: 5 s, so that within the
    # outage the stages' own retries run in testcontainers mode too (not only the probe).
    quick = settings.elasticsearch.model_copy(update={"request_timeout": 5.0})
    config = make_config(
        settings.model_copy(update={"elasticsearch": quick}), tmp_path, ["orders", "payments"]
    )
    kafka_topics.ensure_topics(config)
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


def _acks(settings: Settings, config: PipelineConfig) -> list[tuple[tuple[int, int], bytes]]:
    """The acks topic by position: a consumer interleaves partitions in no fixed order."""
    return sorted((position, value) for _, value, position in read_raw(settings, config.acks_topic))


def _assert_nothing_lost(settings: Settings, config: PipelineConfig, data: Dataset) -> None:
    assert_exact_join(settings, config, data.expected)


def test_elasticsearch_stopped_for_30_seconds_mid_run(
    spark: Any, settings: Settings, config: PipelineConfig, server_control: ServerControl
) -> None:
    server_control.require("an Elasticsearch outage mid-run loses nothing and fires nothing twice")
    data, first, second = _waves(config)
    with RunningPipeline(spark, config) as run:
        _run_first_wave(run, first)
        acks_before = _acks(settings, config)  # the topic, not a driver count

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
            assert _acks(settings, config) == acks_before, "no ack for unindexed data"
        finally:
            server_control.start()

        run.wait_for(lambda: run.metrics.get("enricher.enriched") == 60, 240, "the second wave")
        # The stages' own retries, not only the probe's alert: a stopped node refuses, a
        # paused container's requests time out; either way the tasks retried and counted.
        assert run.metrics.get(names.ES_RETRIES) > 0
        # The health probe clears the alert on its next look (the last batch can beat it).
        run.wait_for(
            lambda: "Elasticsearch unavailable" not in pipeline.status_line(run.metrics),
            30,
            "the alert to clear",
        )
    _assert_nothing_lost(settings, config, data)


def test_kafka_down_while_a_batch_is_being_published(
    spark: Any,
    settings: Settings,
    config: PipelineConfig,
    server_control: ServerControl,
    tmp_path: Path,
) -> None:
    """The broker goes away while an indexer task holds an open transaction with its acks."""
    server_control.require("a Kafka outage while a batch is published: retried, nothing lost")
    data, first, second = _waves(config)
    gate = tmp_path / "gate"
    held = Path(f"{gate}.reached")
    hold = {faults.HOLD_ENV: f"indexer.before_commit={gate}"}
    with worker_env(spark, **hold), RunningPipeline(spark, config) as run:
        _run_first_wave(run, first)  # no gate yet: nothing held
        gate.write_text("")
        produce(config, second)
        run.wait_for(held.exists, 120, "an indexer task to hold its open transaction")

        server_control.stop("kafka")
        stopped = time.monotonic()
        try:
            run.wait_for(
                lambda: "Kafka unavailable" in pipeline.status_line(run.metrics),
                60,
                "the status line to report the outage",
            )
            gate.unlink()  # the task now commits against a broker that is gone
            run.wait_for(
                lambda: time.monotonic() - stopped >= KAFKA_OUTAGE_SECONDS, 60, "the outage"
            )
            assert run.metrics.get("enricher.enriched") == 30, "nothing gets through Kafka"
        finally:
            server_control.start()

        run.wait_for(lambda: run.metrics.get("enricher.enriched") == 60, 240, "the second wave")
        # The writer's own loop ran: its commit timed out in the outage and was retried.
        assert run.metrics.get(names.KAFKA_RETRIES) > 0
        run.wait_for(
            lambda: "Kafka unavailable" not in pipeline.status_line(run.metrics),
            30,
            "the alert to clear",
        )
    _assert_nothing_lost(settings, config, data)
