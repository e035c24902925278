"""The oldest fan-out not worked yet: when the dimension row changed that still waits.

A fan-out request (:mod:`acks.fanout`) waits on ``<pipeline>.fanout`` from the
offset its query committed on. The oldest pending change is the earliest
``requested_at`` among the requests not yet read: they are few (one per
changed row whose fan-out is under way), and only ``fusion status`` reads them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime

from confluent_kafka import Consumer, TopicPartition

from acks import AckError, FanoutRequest
from fusion.core import PipelineConfig
from fusion.kafka import client as kafka_client
from fusion.kafka.markers import Marker

Markers = Mapping[str, tuple[Marker | None, dict[tuple[str, int], int]]]


def oldest_pending(config: PipelineConfig, markers: Markers) -> datetime | None:
    """``requested_at`` of the oldest fan-out request not worked yet; None if none waits."""
    if not config.dimensions:
        return None
    topic = config.fanout_topic
    committed: dict[int, int] = {}
    for _, offsets in markers.values():
        for (name, partition), offset in offsets.items():
            if name == topic:
                committed[partition] = max(offset, committed.get(partition, 0))
    consumer = kafka_client.consumer(config.kafka, f"fusion-status-{config.name}")
    try:
        metadata = consumer.list_topics(timeout=10).topics
        partitions = metadata[topic].partitions if topic in metadata else {}
        ranges = {}
        for partition in partitions:
            low, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            start = max(low, committed.get(partition, 0))
            if start < end:
                ranges[partition] = (start, end)
        return _oldest(consumer, topic, ranges)
    finally:
        consumer.close()


def _oldest(
    consumer: Consumer, topic: str, ranges: Mapping[int, tuple[int, int]]
) -> datetime | None:
    """The earliest ``requested_at`` of the requests in ``ranges`` (partition: start, end).

    Every pending request is read, up to :data:`MOST`: a continued fan-out goes
    back on the topic behind newer requests, its time the change's it serves.
    """
    if not ranges:
        return None
    consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in ranges.items()])
    oldest: datetime | None = None
    left = {p for p in ranges}
    read, deadline = 0, time.monotonic() + 10  # status must answer
    while left and read < MOST and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        partition, offset = message.partition() or 0, message.offset() or 0
        read += 1
        if offset + 1 >= ranges[partition][1]:
            left.discard(partition)
        try:
            at = FanoutRequest.from_bytes(message.value()).requested_at
        except AckError:
            continue  # a malformed request is the fan-out's dead letter, not its age
        oldest = at if oldest is None else min(oldest, at)
    return oldest


MOST = 100_000  # requests read at the most: past them, the oldest of those read
