"""Batch markers: the last batch each writer committed, and what it counted.

A writer (a query's driver, a task, ``fusion reconcile``) commits a marker with
each batch's transaction, as the consumer-group offset metadata of its group
on the markers topic (:mod:`fusion.kafka.exactly_once`). :func:`read_markers`
reads them back, with the input offsets committed alongside, for ``fusion
status``, consumer lag and the benchmark.

Kafka deletes a group's offsets ``offsets.retention.minutes`` (7 days by
default) after its last commit. Only a replay needs a marker: the batch Spark
planned but never committed, after a crash. :func:`replay_unmarked` tells,
at start, when such a batch waits and the markers are gone.
"""

from __future__ import annotations

import base64
import json
import random
import re
import uuid
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from confluent_kafka import TopicPartition

from fusion.core import KafkaSettings, PipelineConfig
from fusion.kafka import client as kafka_client
from fusion.kafka.retry import retry_kafka
from fusion.observe import names, sketch


@dataclass(frozen=True)
class Marker:
    """The last batch a writer committed, and what that batch counted."""

    query: str
    batch: int
    counts: Mapping[str, int] = field(default_factory=dict)

    def to_metadata(self) -> str:
        """The marker as offset metadata: JSON, deflated (see :data:`PACKED`)."""
        text = json.dumps({"q": self.query, "b": self.batch, "c": dict(self.counts)})
        return PACKED + base64.b64encode(zlib.compress(text.encode(), 9)).decode()

    @classmethod
    def from_metadata(cls, text: str | None) -> Marker | None:
        try:
            text = text or ""
            if text.startswith(PACKED):
                # Base64 ends at the first character outside its alphabet: stray bytes go.
                packed = re.match(r"[A-Za-z0-9+/=]*", text[len(PACKED) :])
                text = zlib.decompress(base64.b64decode(packed.group() if packed else "")).decode()
            # The JSON that starts the text: librdkafka at times hands a committed offset's
            # metadata back with stray bytes after it.
            data, _ = json.JSONDecoder().raw_decode(text)
            return cls(str(data["q"]), int(data["b"]), dict(data.get("c", {})))
        except (ValueError, KeyError, TypeError, zlib.error):
            return None


# Offset metadata is limited to ``offset.metadata.max.bytes`` (4,096 bytes by default): a
# marker's counts, six per source and 28 latency bins, are deflated (a pipeline of 16
# sources: 7.3 KB of JSON, 1.6 KB packed). Plain JSON markers (before 0.1) still read.
PACKED = "z:"


def largest_marker(config: PipelineConfig) -> int:
    """The metadata size of the largest marker this pipeline's writers can commit.

    Every count any of its writers keeps (a driver keeps its query's, the single
    query's drivers every source's), each of 13 random digits (digits deflate
    worst), under a query id.
    """
    wanted = [
        names.source_count(source, what)
        for source in config.source_names
        for what in (*SOURCE_COUNTS, names.DLQ)
    ]
    wanted += [
        names.lost_in_partition(source, p)
        for source in config.source_names
        for p in range(config.pipeline.topic_partitions)
    ]
    stage = [n for n in _STAGE_COUNTS if config.dimensions or n not in names.DIMENSION_COUNTS]
    # The latency sketch's bins: at most MAX_BINS, of the longest names.
    bins = [sketch.bin_name(0, -300 - n) for n in range(sketch.MAX_BINS)]
    wanted += stage + bins
    rng = random.Random(len(wanted))
    counts = {name: rng.randrange(10**12, 10**13) for name in wanted}
    return len(Marker(str(uuid.uuid4()), 10**12, counts).to_metadata())


SOURCE_COUNTS = (
    names.SOURCE_RECORDS,
    names.SOURCE_INDEXED,
    names.SOURCE_ACKS,
    names.SOURCE_STALE,
    names.SOURCE_BULK_REQUESTS,
    names.SOURCE_LOST,
    names.SOURCE_TOMBSTONES,
    names.SOURCE_DELETED,
)
_STAGE_COUNTS = [
    value
    for name, value in vars(names).items()
    if name.isupper() and isinstance(value, str) and "." in value
]


def read_markers(
    settings: KafkaSettings,
    markers_topic: str,
    groups: Mapping[str, Sequence[str]],
    timeout: float = 30.0,
) -> dict[str, tuple[Marker | None, dict[tuple[str, int], int]]]:
    """For each writer group (and the topics it reads): its marker and committed input offsets.

    Read with a consumer of that group, which never joins it (librdkafka's
    admin call for the same answer crashes while the offsets coordinator loads).
    Its isolation level is ``read_uncommitted``: a ``read_committed`` consumer
    asks for stable offsets, and waits while a transaction that commits
    offsets to the group is open, up to its timeout when a killed writer left
    it so; the offsets answered are the committed ones either way.
    """
    result: dict[str, tuple[Marker | None, dict[tuple[str, int], int]]] = {}
    for group, topics in groups.items():
        consumer = kafka_client.consumer(settings, group, {"isolation.level": "read_uncommitted"})
        try:
            metadata = consumer.list_topics(timeout=timeout).topics
            wanted = [TopicPartition(markers_topic, 0)] + [
                TopicPartition(topic, partition)
                for topic in topics
                if topic in metadata
                for partition in metadata[topic].partitions
            ]
            positions: list[TopicPartition] = retry_kafka(
                partial(consumer.committed, wanted, timeout=timeout),
                timeout,
                "read a batch marker",
            )
        finally:
            consumer.close()
        marker = None
        offsets: dict[tuple[str, int], int] = {}
        for tp in positions:
            if tp.offset < 0:
                continue
            if tp.topic == markers_topic:
                marker = Marker.from_metadata(tp.metadata)
            else:
                offsets[(tp.topic, tp.partition)] = tp.offset
        result[group] = (marker, offsets)
    return result


def replay_unmarked(
    planned: Sequence[int], committed: Sequence[int], marker: Marker | None, query: str
) -> int | None:
    """The batch a query would replay without its markers, or None if its replay is safe.

    A query that committed a batch always left its driver's marker (the first
    batch of every run commits one), so a checkpoint with committed batches and
    no marker of its query means Kafka expired the markers (or the markers
    topic was recreated). That matters only if a batch waits to be replayed.
    """
    if not planned or not committed or planned[-1] <= committed[-1]:
        return None  # nothing to replay, or the very first batch (no marker expected yet)
    if marker is not None and marker.query == query:
        return None
    return planned[-1]
