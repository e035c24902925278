"""The counter query: Spark keyed state over the ack topic, one ready event per complete key.

The acks are grouped by join key into ``transformWithState`` (RocksDB state
store, checkpointed, processing-time timers). Its processor keeps each key's
:class:`~fusion.counter.KeyState` and applies :func:`fusion.counter.decide` to
new acks and :func:`fusion.counter.on_deadline` to expired timers. It emits a
row per event: ``ready``, ``updated``, ``incomplete``, ``dead`` (a rejected
ack) and ``new`` (a key seen for the first time, for the status line). A
foreachBatch sink then publishes each state partition's events of a
micro-batch from an executor task, in one Kafka transaction with the batch id
marker (:mod:`fusion.output`), keyed by join key.

Spark commits the state and the input offsets of a batch only after every
task's transaction committed. A crash before that replays the batch from the
same state with the same batch timestamp, so it computes the same events in
the same state partitions; a partition whose transaction had committed finds
its marker and publishes nothing. A read_committed reader of the ready topic
therefore sees each key fire once.

A key's state lives ``state_ttl`` after its last change (Spark's state TTL),
then goes: fired and expired keys do not accumulate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from acks.contract import ACK_SPARK_SCHEMA
from fusion.config import PipelineConfig
from fusion.counter import (
    STATE_SCHEMA,
    AckSeen,
    Decision,
    KeyState,
    Now,
    Rules,
    decide,
    on_deadline,
)
from fusion.events import DeadLetter, ReadyEvent, iso_from_ms
from fusion.metrics import Metrics
from fusion.output import OutRecord
from fusion.spark_io import BatchStage, read_kafka, start_foreach_batch
from fusion.tasks import Counts, Job, Work, column

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

OUTPUT_SCHEMA = (
    "kind STRING, key STRING, event STRING, reason STRING, raw STRING, topic STRING, "
    "partition INT, offset BIGINT"
)


class AckCounter(StatefulProcessor):
    """Spark's side of the counter: state and timer I/O around the pure decisions."""

    def __init__(self, rules: Rules, ttl_ms: int | None) -> None:
        self.rules = rules
        self.ttl_ms = ttl_ms

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.state = handle.getValueState("key_state", STATE_SCHEMA, self.ttl_ms)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        before = self._load()
        acks = [
            AckSeen(
                r.source, r.acked_at, r.raw, r.topic, r.partition, r.offset, r.version, r.digest
            )
            for r in rows
        ]
        decision = decide(key[0], before, acks, self.rules, _now(timerValues))
        yield from self._apply(key[0], before, decision)

    def handleExpiredTimer(
        self, key: Any, timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[Any]:
        before = self._load()
        decision = on_deadline(key[0], before, self.rules, _now(timerValues))
        yield from self._apply(key[0], before, decision)

    def _load(self) -> KeyState | None:
        stored = self.state.get()  # one round trip to the state server, None for a new key
        return None if stored is None else KeyState.from_row(tuple(stored))

    def _apply(self, key: str, before: KeyState | None, decision: Decision) -> Iterator[Any]:
        from pyspark.sql import Row

        if decision.delete_timer is not None:
            self.handle.deleteTimer(decision.delete_timer)
        if decision.register_timer is not None:
            self.handle.registerTimer(decision.register_timer)
        if decision.state is not None and decision.state != before:
            self.state.update(decision.state.to_row())

        def row(kind: str, event: str | None = None, **dead: Any) -> Any:
            fields = {"reason": None, "raw": None, "topic": None, "partition": None, "offset": None}
            return Row(kind=kind, key=key, event=event, **(fields | dead))

        if decision.new_key:
            yield row("new")  # lets the sink count keys, for the pending count
        for event in decision.events:
            kind = event.kind if isinstance(event, ReadyEvent) else "incomplete"
            yield row(kind, event.model_dump_json())
        for ack, reason in decision.rejected:
            yield row(
                "dead",
                reason=reason,
                raw=ack.raw,
                topic=ack.topic,
                partition=ack.partition,
                offset=ack.offset,
            )

    def close(self) -> None:
        pass


def _now(timer_values: Any) -> Now:
    # The batch's timestamp, not the wall clock: a replayed batch decides the same.
    ms = int(timer_values.getCurrentProcessingTimeInMs())
    return Now(iso_from_ms(ms), ms)


class CounterBatch(BatchStage):
    """The driver side of the counter: its tasks publish the events of each state partition."""

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, "counter", "counter")

    def work(self) -> Work:
        return publish_events

    def columns(self, batch: DataFrame) -> DataFrame:
        return batch


def publish_events(job: Job, rows: pa.Table) -> Counts:
    """Task function: one state partition's events of a batch, in one Kafka transaction.

    The transactional id is derived from the state partition: a replay
    recomputes the same events for the same partition from the same state.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None, "publish_events runs in a Spark task"
    output = job.output(f"p{context.partitionId()}")
    done = output.committed(job.query, job.batch_id)
    if done is not None:
        return {**done.counts, "tasks.replayed": 1}
    config = job.config
    topics = {
        "ready": config.ready_topic,
        "updated": config.updates_topic,
        "incomplete": config.incomplete_topic,
    }
    out: list[OutRecord] = []
    kinds: Counter[str] = Counter()
    names = ("kind", "key", "event", "reason", "raw", "topic", "partition", "offset")
    for kind, key, event, reason, raw, topic, partition, offset in zip(
        *(column(rows, name) for name in names), strict=True
    ):
        kinds[kind] += 1
        if kind == "dead":
            letter = DeadLetter.of(
                reason,
                "counter",
                None,
                (topic, partition, offset),
                raw.encode() if raw is not None else None,
                key or None,
            )
            out.append((config.dlq_topic, key or None, letter.to_bytes()))
        elif kind != "new":
            out.append((topics[kind], key, event.encode()))
    counts = {
        "counter.dlq": kinds["dead"],
        "counter.fired": kinds["ready"],
        "counter.updated": kinds["updated"],
        "counter.incomplete": kinds["incomplete"],
        "counter.keys": kinds["new"],
    }
    published = output.publish(job.query, job.batch_id, out, counts)
    return {**published.marker.counts, "tasks.replayed": int(not published.written)}


def parsed_acks(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The ack topic as rows of the fields the counter reads, plus where each ack came from."""
    from pyspark.sql import functions as F

    stream = read_kafka(spark, config, config.acks_topic)
    ack = F.from_json(F.col("value").cast("string"), ACK_SPARK_SCHEMA)
    return stream.select(
        # A malformed ack still needs a group; its Kafka key (or "") gets it to the processor.
        F.coalesce(ack["key"], F.col("key").cast("string"), F.lit("")).alias("k"),
        ack["source"].alias("source"),
        ack["acked_at"].alias("acked_at"),
        ack["version"].alias("version"),
        ack["digest"].alias("digest"),
        F.col("value").cast("string").alias("raw"),
        "topic",
        "partition",
        "offset",
    )


NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def runs_idle_batches(config: PipelineConfig) -> bool:
    """Whether the counter needs micro-batches without new acks: only to fire deadlines.

    An idle batch of ``transformWithState`` in processing-time mode is not
    free (a job over every state partition, a Python pass and a state-store
    commit each): on two cores, running one every trigger took most of the
    machine while nothing arrived. Without deadlines no timer is ever
    registered; state that outlived ``state_ttl`` then leaves at the next
    batch that has acks, not while the counter is idle.
    """
    return any(timeout is not None for timeout in config.timeouts.values())


def start_counter(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    ttl = config.pipeline.state_ttl
    processor = AckCounter(Rules.of(config), None if ttl is None else int(ttl * 1000))
    counted = (
        parsed_acks(spark, config)
        .groupBy("k")
        .transformWithState(
            statefulProcessor=processor,
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="ProcessingTime",
        )
    )
    conf = {NO_DATA_BATCHES: str(runs_idle_batches(config)).lower()}
    return start_foreach_batch(counted, CounterBatch(config, metrics), conf)
