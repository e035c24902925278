"""Helpers for end-to-end tests: a uniquely named pipeline, run in the session's SparkSession."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from fusion import pipeline
from fusion.core.config import PipelineConfig
from fusion.core.errors import WaitTimeoutError
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import client as kafka_client
from fusion.kafka.lag import lag_of, stage_markers
from fusion.observe.metrics import Metrics
from fusion.ops import teardown
from fusion.ops.health import HealthWatch
from fusion.spark import watch
from fusion.spark.watch import Watcher
from fusion.topology import topology_of
from indexers.records import RawRecord, SourceRecord, parse


def make_config(
    settings: Settings, checkpoints: Path, sources: list[str], **pipeline_options: Any
) -> PipelineConfig:
    name = f"p{uuid.uuid4().hex[:10]}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {
        "name": name,
        "key_field": "entity_id",
        "checkpoint_dir": str(checkpoints / name),
        "trigger_interval": "200 milliseconds",
        # Two partitions a topic, as production topics have several: every per-partition
        # path (transactional ids, offsets, lost records) is exercised with more than one.
        "topic_partitions": 2,
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
    """Run the selected queries until ``done`` holds; fail if nothing happened for ``idle_limit`` s
    before it did (a stalled run must not pass for one that finished)."""
    metrics = metrics or Metrics()
    pipeline.prepare(config)
    queries = pipeline.start(spark, config, topology_of(config).select(only), metrics)
    finished = False

    def check() -> bool:
        nonlocal finished
        finished = done(metrics)
        return finished

    watch.run_until(queries, idle_limit, done=check, poll=0.2)
    if not finished:
        raise AssertionError(f"the run stalled: no input for {idle_limit:g} s, never done")
    return metrics


def reached(targets: Mapping[str, int]) -> Callable[[Metrics], bool]:
    """A ``done`` for :func:`run_pipeline`: every named count at least its target."""
    return lambda metrics: all(metrics.get(name) >= n for name, n in targets.items())


def source_record(
    config: PipelineConfig, source: str, key: str, **fields: Any
) -> tuple[str, str, bytes]:
    """One source record for ``produce``: ``{"entity_id": key, **fields}`` on its topic."""
    value = json.dumps({"entity_id": key, **fields}).encode()
    return (config.topic_of(config.source(source)), key, value)


def parsed_records(n: int, start: int = 0) -> list[SourceRecord]:
    """``n`` parsed records ``{"id": "k<i>"}`` of source ``s``, for bulk writes."""
    records = []
    for i in range(start, start + n):
        parsed = parse(RawRecord(b'{"id": "k%d"}' % i, "t", 0, i), "s", "id", 1000)
        assert isinstance(parsed, SourceRecord)
        records.append(parsed)
    return records


def drop(config: PipelineConfig) -> None:
    teardown.delete_all(config)


def read_topic(
    settings: Settings, topic: str, timeout: float = 60.0
) -> list[tuple[str | None, Any]]:
    """Every committed record of ``topic`` up to its current end, as (key, decoded JSON value)."""
    return [(key, json.loads(value)) for key, value, _ in read_raw(settings, topic, timeout)]


def read_raw(
    settings: Settings, topic: str, timeout: float = 60.0
) -> list[tuple[str | None, bytes, tuple[int, int]]]:
    """Every committed record of ``topic`` up to its end: (key, value, (partition, offset))."""
    consumer = kafka_client.consumer(settings.kafka, f"test-{uuid.uuid4().hex}")
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions]
        consumer.assign(partitions)
        watermarks = {
            tp.partition: consumer.get_watermark_offsets(tp, timeout=10) for tp in partitions
        }
        # A partition whose records were all deleted (its log starts at its end) has none to read.
        ends = {p: 0 if low >= end else end for p, (low, end) in watermarks.items()}
        records: list[tuple[str | None, bytes, tuple[int, int]]] = []
        deadline = time.monotonic() + timeout
        while not _at_end(consumer, partitions, ends):
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            key = message.key().decode() if message.key() is not None else None
            records.append((key, message.value(), (message.partition(), message.offset())))
        return records
    finally:
        consumer.close()


def end_offsets(settings: Settings, topic: str) -> dict[int, int]:
    """Each partition of ``topic``: its end offset now."""
    consumer = kafka_client.consumer(settings.kafka, f"test-{uuid.uuid4().hex}")
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
    finally:
        consumer.close()


def delete_to_end(settings: Settings, topic: str) -> dict[int, int]:
    """Delete every record of ``topic`` as retention would; each partition's end offset."""
    ends = end_offsets(settings, topic)
    admin = kafka_client.admin(settings.kafka)
    deleted = [TopicPartition(topic, p, end) for p, end in ends.items()]
    for future in admin.delete_records(deleted).values():
        future.result(timeout=60)
    return ends


def _at_end(consumer: Any, partitions: list[TopicPartition], ends: dict[int, int]) -> bool:
    positions = consumer.position(partitions)
    return all(tp.offset >= ends[tp.partition] or ends[tp.partition] == 0 for tp in positions)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    """A Prometheus scrape of ``url``: (sample name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def doc_count(es: Any, index: str) -> int:
    """Documents in ``index``; 0 while it is missing or its shard has not started yet (503)."""
    return int(es.options(ignore_status=(404, 503)).count(index=index).get("count", 0))


def enriched_docs(settings: Settings, config: PipelineConfig) -> dict[str, dict[str, Any]]:
    es = es_client.connect(config.elasticsearch)
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
        everything = topology_of(config).select()
        self.queries = pipeline.start(spark, config, everything, self.metrics)
        self.health = HealthWatch(config, self.metrics).__enter__()

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        wait_until(condition, self.queries, timeout, what)

    def stop(self) -> None:
        self.health.__exit__(None, None, None)
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
    options = {"topic_partitions": 2} | options  # more than one: see make_config
    pipeline_lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    lines = ["[pipeline]", *pipeline_lines]
    for source in sources:
        lines += ["[[sources]]", f'name = "{source}"', f'topic = "{name}.{source}"']
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def worker_env(spark: Any, **env: str) -> Iterator[None]:
    """Environment variables for the Python workers of tasks started while inside.

    Spark hands ``SparkContext.environment`` to every Python worker it starts
    for a task, so fault injection (:mod:`fusion.core.faults`) reaches the
    executors of the session the tests share, and leaves with the block.
    """
    environment = spark.sparkContext.environment
    saved = {name: environment.get(name) for name in env}
    environment.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value


def assert_exact_join(
    settings: Settings,
    config: PipelineConfig,
    expected: dict[str, Any],
    no_dead_letters: bool = True,
    ready_deleted: frozenset[str] = frozenset(),
) -> None:
    """The pipeline's whole output is the expected join, each complete key exactly once.

    Every complete key (and no other) fired once on the committed ready topic,
    has its enriched document, equal to the expected join, and appears once on
    the enriched topic; with ``no_dead_letters``, the DLQ is empty. The keys of
    ``ready_deleted`` fired before their ready events were deleted: none fired again.
    """
    ready = Counter(key for key, _ in read_topic(settings, config.ready_topic))
    once = Counter(set(expected) - ready_deleted)
    assert ready == once, "each complete key fired exactly once, no other"
    docs = enriched_docs(settings, config)
    assert set(docs) == set(expected)
    for key, doc in docs.items():
        doc.pop("fusion")
        assert doc == expected[key], key
    enriched = Counter(key for key, _ in read_topic(settings, config.enriched_topic))
    assert enriched == Counter(set(expected)), "the enriched topic has each key exactly once"
    if no_dead_letters:
        assert read_topic(settings, config.dlq_topic) == []


def wait_until(
    condition: Callable[[], bool],
    queries: list[Any],
    timeout: float | None = None,
    what: str = "the condition",
    poll: float = 0.2,
) -> None:
    """Block until ``condition()`` holds; fail at once if a query died, or after ``timeout`` s."""
    watcher = Watcher(queries)
    deadline = None if timeout is None else time.monotonic() + timeout
    while not condition():
        watcher.check()
        if deadline is not None and time.monotonic() > deadline:
            raise WaitTimeoutError(
                f"{what} ({timeout:.0f} s)", "the queries run, but too slowly or not at all"
            )
        time.sleep(poll)


def consumer_lag(config: PipelineConfig, only: str | None = None) -> dict[str, int | None]:
    """Records (plus transaction markers) each query (or ``only`` that one) still has to read."""
    inputs = {n: t for n, t in topology_of(config).inputs().items() if only in (None, n)}
    return lag_of(config, inputs, stage_markers(config, inputs))
