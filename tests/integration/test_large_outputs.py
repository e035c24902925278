"""Outputs larger than Kafka's default message size: no record stops a query.

A source record may be up to ``max_record_bytes`` (1 MiB by default), so the
enriched document of a key joins up to N of them: more than a broker's
default 1 MB message. The topics Fusion creates take what Fusion accepts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic

from fusion.bench.generator import produce
from fusion.core.settings import Settings
from fusion.kafka import client as kafka_client
from fusion.kafka import topics as kafka_topics
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    make_config,
    read_topic,
    run_pipeline,
    source_record,
)

SOURCES = ["billing", "insurance", "treatment"]
PART_BYTES = 450_000


def test_a_key_joining_three_large_records_is_enriched_and_so_are_the_keys_after_it(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, SOURCES)
    # Each part is legal (under 1 MiB); the three together are 1.35 MB of enriched document.
    big = [source_record(config, s, "BIG", blob="x" * PART_BYTES) for s in SOURCES]
    ordinary = [source_record(config, s, f"K{n}", n=n) for n in range(200) for s in SOURCES]
    try:
        kafka_topics.ensure_topics(config)
        produce(config, big + ordinary)
        metrics = run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") >= 201)

        enriched = enriched_docs(settings, config)
        assert set(enriched) == {"BIG"} | {f"K{n}" for n in range(200)}
        assert len(enriched["BIG"]["treatment"]["blob"]) == PART_BYTES
        on_topic = dict(read_topic(settings, config.enriched_topic))
        assert len(json.dumps(on_topic["BIG"])) > 3 * PART_BYTES
        assert metrics.total(".dlq") == 0
    finally:
        drop(config)


def test_an_output_topic_made_before_takes_the_largest_record_at_the_next_start(
    settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["a", "b"])
    admin = kafka_client.admin(settings.kafka)
    # As an older Fusion (or a script) left it: the broker's 1 MB default, set explicitly.
    made = NewTopic(config.enriched_topic, 1, -1, config={"max.message.bytes": "1000000"})
    admin.create_topics([made])[config.enriched_topic].result(timeout=60)
    try:
        kafka_topics.ensure_topics(config)

        resource = ConfigResource(ResourceType.TOPIC, config.enriched_topic)
        entries = admin.describe_configs([resource])[resource].result(timeout=60)
        assert int(entries["max.message.bytes"].value) == config.topic_message_bytes
        assert config.topic_message_bytes > 3 * config.max_record_bytes
    finally:
        drop(config)
