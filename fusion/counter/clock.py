"""The counter's deadline clock: a micro-batch when a deadline is due, none while nothing is.

Spark fires ``transformWithState``'s processing-time timers in every
micro-batch the counter runs, but the counter runs one only when acks arrive
(an empty micro-batch per trigger costs a job over every state partition:
most of two cores, idle). A key whose deadline comes while no ack arrives
would wait for the next ack. The clock closes that gap:

1. each counter batch reports the deadlines its keys registered, bucketed to
   ``deadline_resolution`` (a count per bucket, ``clock.<epoch ms>``; the
   executors add them up, the driver gets a few numbers);
2. the clock keeps the buckets; when one comes due and no batch has run since,
   it produces one tick record to the pipeline's clock topic, which the
   counter reads with its acks: the tick makes a micro-batch, the batch fires
   the timers that are due;
3. a batch at or after a bucket's time settles it (its timers fired in it).

So a pipeline with deadlines and no input runs no batch until a deadline is
due, then one per bucket at most, and a deadline fires within its resolution
plus one micro-batch. A key that fires before its deadline deletes its timer
and reports it (a negative count for its bucket): a bucket whose keys all
fired early is dropped and costs no batch. A key waiting for a required source
without a timeout has a deadline too, at ``state_ttl``
(:mod:`fusion.counter.decisions`).

After a restart the schedule is rebuilt from the timers in the counter's
checkpoint (:func:`registered_deadlines`), read on the executors and reduced
to buckets there.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.kafka import client as kafka_client
from fusion.observe import names
from fusion.topology import topology_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PREFIX = names.CLOCK_PREFIX


def bucket_of(due_ms: int, resolution_ms: int) -> int:
    """The bucket (epoch ms, a multiple of the resolution) a deadline falls in: rounded up."""
    return math.ceil(due_ms / resolution_ms) * resolution_ms


def split_counts(counts: Mapping[str, int]) -> tuple[dict[str, int], dict[int, int]]:
    """A batch's counts without the clock's, and the clock's as bucket -> deadlines."""
    plain = {name: n for name, n in counts.items() if not name.startswith(PREFIX)}
    buckets = {int(name[len(PREFIX) :]): n for name, n in counts.items() if name.startswith(PREFIX)}
    return plain, buckets


class Schedule:
    """Deadline buckets not yet settled by a batch (pure: the clock's decisions)."""

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.last_batch_ms = 0  # the newest batch's timestamp

    def add(self, buckets: Mapping[int, int]) -> None:
        """Timers registered (positive counts) and deleted (negative) per bucket."""
        for bucket, count in buckets.items():
            if bucket > self.last_batch_ms:
                left = self.buckets.get(bucket, 0) + count
                if left > 0:
                    self.buckets[bucket] = left
                else:
                    self.buckets.pop(bucket, None)  # every key in it fired early: no batch

    def batch_ran(self, batch_ms: int) -> None:
        """A batch with this timestamp fired every timer due by then."""
        self.last_batch_ms = max(self.last_batch_ms, batch_ms)
        for bucket in [b for b in self.buckets if b <= batch_ms]:
            del self.buckets[bucket]

    def next_due(self) -> int | None:
        return min(self.buckets, default=None)

    def tick_due(self, now_ms: int) -> bool:
        """Whether a tick is needed now: a bucket is due and no batch ran since."""
        due = self.next_due()
        return due is not None and due <= now_ms


class DeadlineClock:
    """Produces a tick to the clock topic when a deadline bucket comes due (a driver thread)."""

    def __init__(
        self, config: PipelineConfig, alive: Callable[[], bool], poll_seconds: float = 0.05
    ) -> None:
        self.config = config
        self.schedule = Schedule()
        self.alive = alive
        self.poll = poll_seconds
        self.ticks = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._ticked = (0, 0.0)  # the bucket the last tick was for, and when: one tick per bucket
        self._thread = threading.Thread(target=self._run, name="fusion-deadline-clock", daemon=True)

    def start(self) -> DeadlineClock:
        self._thread.start()
        return self

    def batch_done(self, batch_ms: int, buckets: Mapping[int, int]) -> None:
        """A counter batch committed: it fired what was due at ``batch_ms``; new ``buckets``."""
        with self._lock:
            self.schedule.batch_ran(batch_ms)
            self.schedule.add(buckets)
        self._wake.set()

    def _waiting_for(self, due: int | None) -> bool:
        """Whether this bucket was ticked for recently: its batch is on its way."""
        bucket, at = self._ticked
        return bucket == due and time.monotonic() - at < RETICK_SECONDS

    def _run(self) -> None:
        producer = kafka_client.producer(self.config.kafka)
        try:
            while self.alive():
                with self._lock:
                    due = self.schedule.next_due()
                    tick = self.schedule.tick_due(_now_ms()) and not self._waiting_for(due)
                if tick and due is not None:
                    producer.produce(self.config.clock_topic, value=b"tick")
                    producer.flush(10)
                    self.ticks += 1
                    self._ticked = (due, time.monotonic())
                wait = self.poll if due is None else max(self.poll, (due - _now_ms()) / 1000)
                self._wake.wait(min(wait, 1.0))
                self._wake.clear()
        finally:
            producer.flush(5)


RETICK_SECONDS = 30.0  # a tick whose batch never came (the query restarted): tick again


def registered_deadlines(spark: SparkSession, config: PipelineConfig) -> dict[int, int]:
    """The deadlines in the counter's checkpoint, as bucket -> timers (summed on the executors)."""
    from pyspark.sql import functions as F

    from fusion.counter.state import has_state

    if not has_state(spark, config):
        return {}
    resolution = int(config.pipeline.deadline_resolution * 1000)
    timers = (
        spark.read.format("statestore")
        .option("readRegisteredTimers", "true")
        .load(config.checkpoint(topology_of(config).counter_query))
    )
    due = timers.select(F.col("expiration_timestamp_ms").alias("due"))
    buckets = due.select((F.ceil(F.col("due") / resolution) * resolution).alias("bucket"))
    # Grouped on the executors: one row per deadline bucket reaches the driver, not per key.
    return {
        int(row.bucket): int(row["count"]) for row in buckets.groupBy("bucket").count().collect()
    }


def _now_ms() -> int:
    return int(time.time() * 1000)
