"""Latency per hop, from Kafka timestamps: where a key's time goes between its topics.

A key crosses three hops, each ending in a record on a topic of its own:

- ``index``: a source record → its ack (the indexer bulk-wrote it with
  ``refresh=wait_for`` and published the ack);
- ``count``: the key's last ack → its ready event (the counter saw every
  source searchable);
- ``enrich``: the ready event → the enriched record (looked up, written,
  confirmed searchable).

Every timestamp is the record's own Kafka timestamp (the producer's create
time), read as a ``read_committed`` consumer reads it. :class:`TopicTimes`
reads the four kinds of topics once a step has drained (:func:`read_since`),
from where they ended when it began: nothing of the benchmark reads records
while the pipeline works on them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition

from fusion.bench import rounded
from fusion.core import PipelineConfig
from fusion.kafka import client as kafka_client
from fusion.observe import percentiles

HOPS = ("index", "count", "enrich")


@dataclass(frozen=True)
class KeyTimes:
    """When each of a key's records reached its topic (seconds since the epoch)."""

    sources: Mapping[str, float]  # source name -> its (first) record
    acks: Mapping[str, float]  # source name -> its (first) ack
    ready: float | None
    enriched: float | None


class TopicTimes:
    """When each key's first record reached the source, ack, ready and enriched topics.

    Only the first record of each key (and source) counts: a replayed or
    duplicated record does not move a key's times.
    """

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self._sources = config.source_of_topic
        self.topics = [*self._sources, config.acks_topic, config.ready_topic,
                       config.enriched_topic]  # fmt: skip
        self._source: dict[tuple[str, str], float] = {}
        self._ack: dict[tuple[str, str], float] = {}
        self._ready: dict[str, float] = {}
        self._enriched: dict[str, float] = {}

    def of(self, key: str) -> KeyTimes:
        names = self._sources.values()
        return KeyTimes(
            {s: self._source[(key, s)] for s in names if (key, s) in self._source},
            {s: self._ack[(key, s)] for s in names if (key, s) in self._ack},
            self._ready.get(key),
            self._enriched.get(key),
        )

    def note(self, message: Any) -> None:
        config = self.config
        topic, key = message.topic(), message.key().decode()
        stamp = message.timestamp()[1] / 1000
        if topic in self._sources:
            self._source.setdefault((key, self._sources[topic]), stamp)
        elif topic == config.acks_topic:
            source = _json_field(message.value(), "source")
            if source is not None:
                self._ack.setdefault((key, source), stamp)
        elif topic == config.ready_topic:
            if _json_field(message.value(), "kind") == "ready":
                self._ready.setdefault(key, stamp)
        elif topic == config.enriched_topic:
            self._enriched.setdefault(key, stamp)


def topic_ends(config: PipelineConfig, topics: list[str]) -> list[TopicPartition]:
    """Each partition of ``topics`` at its end now: where the next record written goes."""
    consumer = kafka_client.consumer(config.kafka, f"bench-ends-{uuid.uuid4().hex}")
    try:
        listed = consumer.list_topics(timeout=30).topics
        return [
            TopicPartition(topic, p, consumer.get_watermark_offsets(
                TopicPartition(topic, p), timeout=10)[1])
            for topic in topics
            for p in listed[topic].partitions
        ]  # fmt: skip
    finally:
        consumer.close()


def read_since(config: PipelineConfig, starts: list[TopicPartition], times: TopicTimes) -> None:
    """Note in ``times`` every committed keyed record from ``starts`` to the partitions' ends
    as they are now (the pipeline has drained: no transaction is left open)."""
    consumer = kafka_client.consumer(config.kafka, f"bench-read-{uuid.uuid4().hex}")
    try:
        ends = {
            (tp.topic, tp.partition): consumer.get_watermark_offsets(tp, timeout=10)[1]
            for tp in starts
        }
        unread = [tp for tp in starts if tp.offset < ends[(tp.topic, tp.partition)]]
        left = {(tp.topic, tp.partition) for tp in unread}
        consumer.assign(unread)
        idle = 0
        # A transaction's commit marker takes the last offset and is never delivered: a
        # partition is done once its position reaches the end, or after 3 s of nothing.
        while left and idle < 6:
            messages = consumer.consume(num_messages=10_000, timeout=0.5)
            idle = 0 if messages else idle + 1
            for message in messages:
                if message.error() is None and message.key() is not None:
                    times.note(message)
            for tp in consumer.position([TopicPartition(t, p) for t, p in left]):
                if tp.offset >= ends[(tp.topic, tp.partition)]:
                    left.discard((tp.topic, tp.partition))
    finally:
        consumer.close()


def _json_field(value: bytes | None, name: str) -> Any:
    try:
        data = json.loads(value or b"")
    except ValueError:
        return None
    return data.get(name) if isinstance(data, dict) else None


def hop_latencies(times: Iterable[KeyTimes]) -> dict[str, list[float]]:
    """Each hop's latencies (seconds, ascending) over the keys that crossed it."""
    hops: dict[str, list[float]] = {hop: [] for hop in HOPS}
    for key in times:
        for source, acked in key.acks.items():
            if source in key.sources:
                hops["index"].append(acked - key.sources[source])
        if key.ready is not None and key.acks:
            hops["count"].append(key.ready - max(key.acks.values()))
        if key.enriched is not None and key.ready is not None:
            hops["enrich"].append(key.enriched - key.ready)
    return {hop: sorted(values) for hop, values in hops.items()}


def hop_summary(times: Iterable[KeyTimes]) -> dict[str, dict[str, float | None]]:
    """``{"index": {"p50": ..., "p95": ..., "p99": ..., "count": ...}, "count": ..., ...}``."""
    summary: dict[str, dict[str, float | None]] = {}
    for hop, values in hop_latencies(times).items():
        spread = percentiles(values)
        summary[hop] = {
            "p50": rounded(spread["p50"]),
            "p95": rounded(spread["p95"]),
            "p99": rounded(spread["p99"]),
            "count": len(values),
        }
    return summary
