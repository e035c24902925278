"""How far behind each query is: its committed input offsets against the topics' ends.

Each query commits its input offsets with its batch marker
(:mod:`fusion.kafka.markers`) in its own consumer group,
``fusion-<pipeline>-<query>``; lag is what the topics hold past them. Read
by ``fusion status``, the Prometheus endpoint, ``--stop-when-idle`` and the
benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from confluent_kafka import TopicPartition

from fusion.core import PipelineConfig
from fusion.kafka import client as kafka_client
from fusion.kafka.markers import Marker, read_markers

# Each query's name and the topics it reads (fusion.topology: Topology.inputs, reads).
Inputs = Mapping[str, Sequence[str]]


def stage_markers(
    config: PipelineConfig, inputs: Inputs
) -> dict[str, tuple[Marker | None, dict[tuple[str, int], int]]]:
    """Each query's last marker and committed input offsets."""
    groups = {f"fusion-{config.name}-{stage}": list(topics) for stage, topics in inputs.items()}
    found = read_markers(config.kafka, config.markers_topic, groups)
    return {group.removeprefix(f"fusion-{config.name}-"): value for group, value in found.items()}


def behind(config: PipelineConfig, inputs: Inputs) -> int:
    """Records the queries of ``inputs`` still have to read; one never committed counts from 0."""
    return sum(stage_lag(config, inputs).values())


def stage_lag(config: PipelineConfig, inputs: Inputs) -> dict[str, int]:
    """Records each query still has to read; one that never committed counts from 0."""
    markers = stage_markers(config, inputs)
    lag = lag_of(config, inputs, markers, unstarted_from_zero=True)
    return {stage: value or 0 for stage, value in lag.items()}


def lag_of(
    config: PipelineConfig,
    inputs: Inputs,
    markers: Mapping[str, tuple[Marker | None, dict[tuple[str, int], int]]],
    unstarted_from_zero: bool = False,
) -> dict[str, int | None]:
    ends = _end_offsets(config, {t for stage in markers for t in inputs[stage]})
    lag: dict[str, int | None] = {}
    for stage, (marker, offsets) in markers.items():
        if marker is None and not unstarted_from_zero:
            lag[stage] = None
            continue
        lag[stage] = sum(
            max(0, end - offsets.get((topic, partition), 0))
            for (topic, partition), end in ends.items()
            if topic in inputs[stage]
        )
    return lag


def source_lag(
    config: PipelineConfig,
    inputs: Inputs,
    markers: Mapping[str, tuple[Marker | None, dict[tuple[str, int], int]]],
) -> dict[str, int | None]:
    """Records each source's topic holds past the furthest any query reading it committed.

    None for a source that no query has committed a batch of yet.
    """
    topics = config.source_of_topic
    committed: dict[tuple[str, int], int] = {}
    started: set[str] = set()
    for stage in inputs:
        if not topics.keys() & set(inputs[stage]):
            continue  # it reads no source topic: the counter, the enricher
        marker, offsets = markers.get(stage, (None, {}))
        if marker is None:
            continue
        started.update(inputs[stage])
        for where, offset in offsets.items():
            committed[where] = max(offset, committed.get(where, 0))
    ends = _end_offsets(config, set(topics))
    return {
        source: None
        if topic not in started
        else sum(max(0, end - committed.get(tp, 0)) for tp, end in ends.items() if tp[0] == topic)
        for topic, source in topics.items()
    }


EARLIEST = -2  # Spark's startingOffsets JSON for "the earliest offset"


def resume_offsets(config: PipelineConfig, stages: Inputs, topics: list[str]) -> str | None:
    """Spark's ``startingOffsets`` JSON: where ``stages`` left ``topics`` (the furthest any did).

    A partition none of them committed starts at the earliest offset. None when
    none of them committed any of ``topics``: start as a new pipeline does.
    """
    committed: dict[tuple[str, int], int] = {}
    for _, offsets in stage_markers(config, stages).values():
        for where, offset in offsets.items():
            committed[where] = max(offset, committed.get(where, 0))
    if not any(topic in topics for topic, _ in committed):
        return None
    found = partitions(config, topics)
    return json.dumps(
        {
            topic: {str(p): committed.get((topic, p), EARLIEST) for p in found[topic]}
            for topic in topics
        }
    )


def partitions(config: PipelineConfig, topics: list[str]) -> dict[str, list[int]]:
    """The partitions of each of ``topics`` (none for a topic that does not exist)."""
    consumer = kafka_client.consumer(config.kafka, f"fusion-status-{config.name}")
    try:
        metadata = consumer.list_topics(timeout=10).topics
        return {t: sorted(metadata[t].partitions) if t in metadata else [] for t in topics}
    finally:
        consumer.close()


def watermarks(config: PipelineConfig, topic: str) -> dict[int, tuple[int, int]]:
    """Each partition of ``topic``: its earliest and end offsets (none if it does not exist)."""
    consumer = kafka_client.consumer(config.kafka, f"fusion-status-{config.name}")
    try:
        metadata = consumer.list_topics(timeout=10).topics
        found = metadata[topic].partitions if topic in metadata else {}
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in found
        }
    finally:
        consumer.close()


def _end_offsets(config: PipelineConfig, topics: set[str]) -> dict[tuple[str, int], int]:
    consumer = kafka_client.consumer(config.kafka, f"fusion-status-{config.name}")
    try:
        metadata = consumer.list_topics(timeout=10).topics
        ends = {}
        for topic in topics:
            for partition in metadata[topic].partitions if topic in metadata else []:
                tp = TopicPartition(topic, partition)
                ends[(topic, partition)] = consumer.get_watermark_offsets(tp, timeout=10)[1]
        return ends
    finally:
        consumer.close()
