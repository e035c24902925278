"""A pipeline of 16 sources end to end: its batch markers fit what Kafka takes.

Each batch marker carries its writer's cumulative counts (six per source,
about thirty latency buckets) in consumer-group offset metadata, which Kafka
limits to ``offset.metadata.max.bytes`` (4,096 bytes by default). Sixteen
sources is the shape of the design's oracle; a marker that did not fit would
have every batch's commit refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.errors import ConfigError
from fusion.core.settings import Settings
from fusion.kafka import client as kafka_client
from fusion.kafka import lag
from fusion.kafka import topics as kafka_topics
from fusion.observe.figures import Figures
from fusion.topology import ALL_SOURCES, SINGLE, topology_of
from tests.integration.pipelines import assert_exact_join, drop, make_config, run_pipeline

SOURCES = [f"department_{n:02d}" for n in range(1, 17)]


@pytest.mark.parametrize("layout", ["single", "stages"])
def test_sixteen_sources_are_joined_exactly_and_counted_in_their_markers(
    spark: Any, settings: Settings, tmp_path: Path, layout: str
) -> None:
    config = make_config(settings, tmp_path, SOURCES, layout=layout, topic_partitions=1)
    data = build_dataset(config, GenOptions(keys=40, seed=16, duplicate_rate=0.1, missing_rate=0.2))
    kafka_topics.ensure_topics(config)
    try:
        produce(config, data.records)
        run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") >= len(data.expected))
        assert_exact_join(settings, config, data.expected)
        # The indexing query's marker holds every source's counts.
        stage = SINGLE if layout == "single" else ALL_SOURCES
        marker, _ = lag.stage_markers(config, topology_of(config).inputs())[stage]
        assert marker is not None, "no marker: its commits were refused"
        figures = Figures(dict(marker.counts))
        assert all(figures.source(s).indexed > 0 for s in SOURCES), marker.counts
    finally:
        drop(config)


def test_a_pipeline_whose_markers_would_not_fit_the_broker_stops_at_start_with_the_fix(
    settings: Settings, tmp_path: Path
) -> None:
    many = [f"department_{n:03d}" for n in range(1, 81)]
    config = make_config(settings, tmp_path, many)
    with pytest.raises(ConfigError) as refused:
        kafka_topics.ensure_topics(config)
    line = str(refused.value)
    assert "80 sources" in line and "over the brokers' limit of 4096" in line, line
    assert "set offset.metadata.max.bytes=" in line, line
    assert config.markers_topic not in kafka_topics_now(settings), "nothing created"


def kafka_topics_now(settings: Settings) -> set[str]:
    return set(kafka_client.admin(settings.kafka).list_topics(timeout=15).topics)
