"""Measuring one step of the sustained-load benchmark: what was sent, what was enriched when.

A step produces at a steady rate for a while; :class:`StepMeter` samples the
pipeline's backlog as it goes, :class:`EnrichedTimes` reads when each key's
enriched record reached its topic, and :func:`fusion.bench.sustain.judge`
tells from both whether the pipeline kept up.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from fusion.bench.report import rounded
from fusion.core.config import PipelineConfig
from fusion.runtime import clients
from fusion.runtime.metrics import percentiles

SAMPLE_SECONDS = 2.0


class EnrichedTimes:
    """Reads the enriched topic (``read_committed``) in a thread: key -> its record's timestamp."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.times: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="enriched-times", daemon=True)

    def __enter__(self) -> EnrichedTimes:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def of(self, keys: list[str]) -> dict[str, float]:
        with self._lock:
            return {k: self.times[k] for k in keys if k in self.times}

    def _read(self) -> None:
        consumer = clients.kafka_consumer(self.config.kafka, f"bench-sustain-{uuid.uuid4().hex}")
        topic = self.config.enriched_topic
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        try:
            while not self._stop.is_set():
                for message in consumer.consume(num_messages=5_000, timeout=0.5):
                    key = message.key()
                    if message.error() is not None or key is None:
                        continue
                    _, stamp_ms = message.timestamp()
                    with self._lock:
                        self.times.setdefault(key.decode(), stamp_ms / 1000)
        finally:
            consumer.close()


@dataclass(frozen=True)
class Sent:
    """What a step produced: its rate, keys, start, duration and each key's last send time."""

    rate: float
    keys: list[str]
    first: float
    seconds: float
    last_send: dict[str, float]


@dataclass(frozen=True)
class Seen:
    """What the step observed: enriched times, backlog samples, drain time, ES requests."""

    found: dict[str, float]
    samples: list[tuple[float, int]]
    drained: float
    lookups: int
    enriched: int


CDF_POINTS = 200


@dataclass
class Step:
    keys_per_second: float  # the rate asked for
    sent_keys_per_second: float  # the rate the producer achieved
    keys: int
    enriched: int
    sustained: bool
    why: str
    latency_p50: float | None
    latency_p95: float | None
    latency_p99: float | None
    latency_max: float | None
    requests_per_key: float | None
    backlog_middle: int
    backlog_last: int
    drain_seconds: float
    cdf: list[float] = field(default_factory=list)  # latencies at CDF_POINTS quantiles


def judge(sent: Sent, seen: Seen, sources: int) -> Step:
    """The step's latencies and whether the pipeline kept up (see the module docstring)."""
    keys, found, first, seconds = sent.keys, seen.found, sent.first, sent.seconds
    latencies = sorted(found[k] - sent.last_send[k] for k in keys if k in found)
    spread = percentiles(latencies)
    middle = [n for t, n in seen.samples if seconds / 3 <= t - first < 2 * seconds / 3]
    last = [n for t, n in seen.samples if t - first >= 2 * seconds / 3]
    backlog_middle, backlog_last = max(middle, default=0), max(last, default=0)
    slack = 2 * sent.rate * sources  # two seconds of input, in records
    if len(found) < len(keys):
        sustained, why = (
            False,
            f"{len(keys) - len(found)} keys not enriched {seen.drained:.0f} s after",
        )
    elif backlog_last > 1.5 * backlog_middle + slack:
        sustained, why = False, f"backlog grew from {backlog_middle:,} to {backlog_last:,} records"
    else:
        sustained, why = True, "every key enriched, backlog bounded"
    return Step(
        keys_per_second=sent.rate,
        sent_keys_per_second=round(len(keys) / seconds, 1),
        keys=len(keys),
        enriched=len(found),
        sustained=sustained,
        why=why,
        latency_p50=rounded(spread["p50"]),
        latency_p95=rounded(spread["p95"]),
        latency_p99=rounded(spread["p99"]),
        latency_max=rounded(latencies[-1]) if latencies else None,
        requests_per_key=round(seen.lookups / seen.enriched, 4) if seen.enriched else None,
        backlog_middle=backlog_middle,
        backlog_last=backlog_last,
        drain_seconds=round(seen.drained, 1),
        cdf=quantiles(latencies, CDF_POINTS),
    )


def quantiles(ordered: list[float], points: int) -> list[float]:
    """``points`` evenly spaced quantiles of an ascending list, for a CDF plot."""
    if not ordered:
        return []
    return [
        round(ordered[min(len(ordered) - 1, i * len(ordered) // points)], 3) for i in range(points)
    ]
