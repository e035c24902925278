"""Helpers for end-to-end tests: a uniquely named pipeline, run in the session's SparkSession."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from fusion import clients, pipeline, topology
from fusion.config import PipelineConfig
from fusion.metrics import Metrics
from fusion.settings import Settings


def make_config(
    settings: Settings, checkpoints: Path, sources: list[str], **pipeline_options: Any
) -> PipelineConfig:
    name = f"p{uuid.uuid4().hex[:10]}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {
        "name": name,
        "key_field": "entity_id",
        "checkpoint_dir": checkpoints / name,
        "trigger_interval": "200 milliseconds",
    } | pipeline_options
    data["sources"] = [{"name": s, "topic": f"{name}.{s}"} for s in sources]
    return PipelineConfig.model_validate(data)


def run_pipeline(
    spark: Any,
    config: PipelineConfig,
    done: Callable[[Metrics], bool],
    only: str | None = None,
    metrics: Metrics | None = None,
    idle_limit: float = 60.0,
) -> Metrics:
    """Run the selected queries until ``done`` holds (or nothing happened for ``idle_limit`` s)."""
    metrics = metrics or Metrics()
    pipeline.prepare(config)
    queries = pipeline.start(spark, config, pipeline.select(config, only), metrics)
    pipeline.run_until(queries, idle_limit, done=lambda: done(metrics), poll=0.2)
    return metrics


def source_record(
    config: PipelineConfig, source: str, key: str, **fields: Any
) -> tuple[str, str, bytes]:
    """One source record for ``produce``: ``{"entity_id": key, **fields}`` on its topic."""
    value = json.dumps({"entity_id": key, **fields}).encode()
    return (config.topic_of(config.source(source)), key, value)


def drop(config: PipelineConfig) -> None:
    topology.delete_all(config)


def read_topic(
    settings: Settings, topic: str, timeout: float = 60.0
) -> list[tuple[str | None, Any]]:
    """Every committed record of ``topic`` up to its current end, as (key, decoded JSON value)."""
    consumer = clients.kafka_consumer(settings.kafka, f"test-{uuid.uuid4().hex}")
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions]
        consumer.assign(partitions)
        ends = {
            tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions
        }
        records: list[tuple[str | None, Any]] = []
        deadline = time.monotonic() + timeout
        while not _at_end(consumer, partitions, ends):
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            key = message.key().decode() if message.key() is not None else None
            records.append((key, json.loads(message.value())))
        return records
    finally:
        consumer.close()


def _at_end(consumer: Any, partitions: list[TopicPartition], ends: dict[int, int]) -> bool:
    positions = consumer.position(partitions)
    return all(tp.offset >= ends[tp.partition] or ends[tp.partition] == 0 for tp in positions)


def enriched_docs(settings: Settings, config: PipelineConfig) -> dict[str, dict[str, Any]]:
    es = clients.elasticsearch(config.elasticsearch)
    es.indices.refresh(index=config.enriched_index)
    hits = es.search(index=config.enriched_index, size=10_000, query={"match_all": {}})
    return {hit["_id"]: hit["_source"] for hit in hits["hits"]["hits"]}


class RunningPipeline:
    """The pipeline's queries running in the session's SparkSession while a test acts on them.

    ``wait_for`` polls a condition and fails at once if a query died, so a
    test waits on what it expects to happen, never on a fixed sleep.
    """

    def __init__(self, spark: Any, config: PipelineConfig, metrics: Metrics | None = None) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        pipeline.prepare(config)
        everything = pipeline.select(config, None)
        self.queries = pipeline.start(spark, config, everything, self.metrics)

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        pipeline.wait_until(condition, self.queries, timeout, what)

    def stop(self) -> None:
        for query in self.queries:
            query.stop()

    def __enter__(self) -> RunningPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_config_file(settings: Settings, path: Path, sources: list[str], **options: Any) -> Path:
    """A pipeline TOML file like a user would write, for tests that run `fusion` as a process."""
    name = f"p{uuid.uuid4().hex[:10]}"
    pipeline_lines = [f'name = "{name}"', 'key_field = "entity_id"']
    pipeline_lines.append(f'checkpoint_dir = "{path.parent / (name + "-checkpoints")}"')
    pipeline_lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    lines = ["[pipeline]", *pipeline_lines]
    for source in sources:
        lines += ["[[sources]]", f'name = "{source}"', f'topic = "{name}.{source}"']
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    path.write_text("\n".join(lines) + "\n")
    return path
