"""The counter query: Spark keyed state over the ack topic, one ready event per complete key.

The acks are grouped by join key into ``transformWithState`` (RocksDB state
store, checkpointed, processing-time timers). Its processor is JVM code
(``fusion/jvm/src/fusion/counter/``): a Python processor pays a socket round
trip to Spark's state server for every state call, several per key and batch,
and held the counter to about 1,150 acks/s on two cores. The processor keeps
each key's state and decides as :func:`fusion.counter.decisions.decide` and
:func:`fusion.counter.decisions.on_deadline` specify (a unit test holds the two to the
same decisions). It emits a row per event: ``ready``, ``updated``,
``incomplete``, ``dead`` (a rejected ack) and ``new`` (a key seen for the
first time, for the status line). A
foreachBatch sink then publishes each state partition's events of a
micro-batch from an executor task, in one Kafka transaction with the batch id
marker (:mod:`fusion.kafka.exactly_once`), keyed by join key.

Spark commits the state and the input offsets of a batch only after every
task's transaction committed. A crash before that replays the batch from the
same state with the same batch timestamp, so it computes the same events in
the same state partitions; a partition whose transaction had committed finds
its marker and publishes nothing. A read_committed reader of the ready topic
therefore sees each key fire once.

A key still waiting for a required source ``state_ttl`` after its first ack
is reported incomplete (reason ``state_ttl``); Spark's state TTL, a margin
longer (:func:`fusion.counter.decisions.retention_ms`), then drops every
key's state that many ms after its last change: fired and expired keys do not
accumulate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError
from fusion.core.events import DeadLetter, dead_letter_records
from fusion.counter import clock, processor
from fusion.counter.decisions import Rules
from fusion.elastic.retry import RetryPolicy
from fusion.enricher.task import Wanted, Where, enrich
from fusion.kafka.exactly_once import OutRecord
from fusion.observe.metrics import Metrics
from fusion.spark.checkpoint import CheckpointFiles
from fusion.spark.jvm_writer import task_counts
from fusion.spark.queries import read_kafka, start_foreach_batch
from fusion.spark.stage import BatchStage
from fusion.spark.tasks import Job, TaskCount, TaskOutput, Work, attributed, column

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class CounterBatch(BatchStage):
    """The driver side of the counter: its tasks publish the events of each state partition."""

    def __init__(self, config: PipelineConfig, metrics: Metrics, name: str = "counter") -> None:
        super().__init__(config, metrics, name, "counter")
        self.clock: clock.DeadlineClock | None = None  # with deadlines: see start_counter

    def work(self) -> Work:
        return publish_events

    def settle(self, batch_ms: int, counts: dict[str, int]) -> dict[str, int]:
        plain, buckets = clock.split_counts(counts)
        if self.clock is not None:
            self.clock.batch_done(batch_ms, buckets)
        return plain

    def columns(self, batch: DataFrame) -> DataFrame:
        return batch

    def run(self, batch: DataFrame, job: Job) -> list[TaskCount]:
        if self.config.pipeline.enrich_in == "counter":
            return super().run(batch, job)  # a Python task enriches what fired
        # Nothing to enrich here: the events go from the JVM processor to Kafka directly.
        config, spark = self.config, batch.sparkSession
        events = spark._jvm.fusion.counter.CounterEvents  # type: ignore[union-attr]
        topics = {
            "ready": config.ready_topic,
            "updated": config.updates_topic,
            "incomplete": config.incomplete_topic,
            "dlq": config.dlq_topic,
            "resolution_ms": str(int(config.pipeline.deadline_resolution * 1000)),
        }
        return task_counts(events.publish(batch._jdf, self.spec(job, spark), json.dumps(topics)))


def publish_events(job: Job, rows: pa.Table) -> Iterator[TaskOutput]:
    """Task function: one state partition's events of a batch, for one Kafka transaction.

    With ``enrich_in = "counter"`` the task also enriches the keys it fired
    (and updated, and expired with ``on_timeout = "partial"``): it looks their
    documents up, writes the enriched documents, and hands the enriched
    records to the writer with the events (a group of keys at a time), for the
    same transaction. The transactional id is derived from the state
    partition: a replay recomputes the same events for the same partition
    from the same state.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None, "publish_events runs in a Spark task"
    config = job.config
    task = f"p{context.partitionId()}"
    events = decided_events(config, rows)
    yield TaskOutput(task, events.records, events.counts)
    if events.to_enrich:
        retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
        for part in enrich(config, job.elasticsearch(), events.to_enrich, retry):
            yield TaskOutput(task, part.records, part.counts)


@dataclass(frozen=True)
class Decided:
    """One state partition's events of a batch: records, counts, and the keys to enrich."""

    records: list[OutRecord]
    counts: dict[str, int]
    to_enrich: list[Wanted]


def decided_events(config: PipelineConfig, rows: pa.Table) -> Decided:
    """The counter's output rows as Kafka records (events, dead letters) and counts.

    With ``enrich_in = "counter"``, also the events whose keys the task
    enriches now; they are not on their topics yet (they go out in the same
    transaction), so a dead letter about one names no offset (-1).
    """
    topics = {
        "ready": config.ready_topic,
        "updated": config.updates_topic,
        "incomplete": config.incomplete_topic,
    }
    enriched = {"ready", "updated"} | (
        {"incomplete"} if config.pipeline.on_timeout == "partial" else set()
    )
    inline = config.pipeline.enrich_in == "counter"
    resolution = int(config.pipeline.deadline_resolution * 1000)
    out: list[OutRecord] = []
    to_enrich: list[Wanted] = []
    kinds: Counter[str] = Counter()
    other: Counter[str] = Counter()  # the clock's buckets; the indexer's counts in a single query
    names = ("kind", "key", "event", "reason", "raw", "topic", "partition", "offset")
    for kind, key, event, reason, raw, topic, partition, offset in zip(
        *(column(rows, name) for name in names), strict=True
    ):
        kinds[kind] += 1
        if kind == "count":  # passed through: name as key, executor as reason, value as offset
            other[key] += offset
            other[attributed(key, reason)] += offset
        elif kind in ("timer", "untimer"):
            bucket = f"{clock.PREFIX}{clock.bucket_of(int(event), resolution)}"
            other[bucket] += 1 if kind == "timer" else -1
        elif kind == "dead":
            letter = DeadLetter.of(
                reason,
                "counter",
                None,
                (topic, partition, offset),
                raw.encode() if raw is not None else None,
                key or None,
            )
            out += dead_letter_records(config.dlq_topic, [letter], config.message_limit)
        elif kind not in ("new", "late"):
            value = event.encode()
            out.append((topics[kind], key, value))
            if inline and kind in enriched:
                to_enrich.append(inline_event(kind, key, value, (topics[kind], -1, -1)))
    counts = {
        "counter.dlq": kinds["dead"],
        "counter.fired": kinds["ready"],
        "counter.updated": kinds["updated"],
        "counter.incomplete": kinds["incomplete"],
        "counter.keys": kinds["new"],
        "counter.fired_late": kinds["late"],
    } | dict(other)
    return Decided(out, counts, to_enrich)


def inline_event(kind: str, key: str, value: bytes, where: Where) -> Wanted:
    """What the enrichment needs of an event the counter decided just now."""
    data = json.loads(value)
    fired_at = data["expired_at"] if kind == "incomplete" else data["fired_at"]
    return Wanted(key, kind, fired_at, where, value)


def parsed_acks(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The ack topic as rows of the fields the counter reads, plus where each ack came from.

    Parsed on the executors by ``fusion.counter.AckParser``, which reads each
    ack as ``from_json(value, ACK_SPARK_SCHEMA)`` would (malformed ones too),
    at about 1.5 times its rate. A malformed ack without a join key is grouped
    by its Kafka key (or ""), so that it still reaches the processor's dead letters.

    With deadlines, the clock topic is read too: its ticks make micro-batches
    (which fire due timers) and are dropped here, before the acks are grouped.
    """
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    topics = [config.acks_topic] + [config.clock_topic] * config.has_deadlines
    stream = read_kafka(spark, config, *topics)
    if config.has_deadlines:
        stream = stream.where(F.col("topic") != F.lit(config.clock_topic))
    parser = spark._jvm.fusion.counter.AckParser  # type: ignore[union-attr]
    return DataFrame(parser.parse(stream._jdf), spark)


NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def rules_json(rules: Rules) -> str:
    """The rules as the JVM counter reads them (``fusion.counter.Json.rules``)."""
    return json.dumps(
        {
            "sources": sorted(rules.sources),
            "required": sorted(rules.required),
            "timeouts_ms": dict(rules.timeouts_ms),
            "on_update": rules.on_update,
            "state_ttl_ms": rules.state_ttl_ms,
        }
    )


def counted_acks(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The acks through the counter's keyed state (the configured engine): a row per event.

    Its columns: ``kind, key, event, reason, raw, topic, partition, offset``."""
    from pyspark.sql import DataFrame

    acks, rules = parsed_acks(spark, config), Rules.of(config)
    if config.pipeline.counter_engine == "python":
        return processor.count(acks, rules)
    counter = spark._jvm.fusion.counter.CounterQuery  # type: ignore[union-attr]
    return DataFrame(counter.count(acks._jdf, rules_json(rules)), spark)


def start_counter(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    """Start the counter; with deadlines, its clock too (:mod:`fusion.counter.clock`).

    The counter runs no micro-batch without new input (an empty batch of
    ``transformWithState`` is a job over every state partition: on two cores,
    one per trigger took most of the machine while nothing arrived); the
    clock's ticks are the input that fires deadlines on time.
    """
    return start_with_clock(spark, config, CounterBatch(config, metrics), counted_acks)


def start_with_clock(
    spark: SparkSession,
    config: PipelineConfig,
    stage: CounterBatch,
    plan: Callable[[SparkSession, PipelineConfig], DataFrame],
) -> StreamingQuery:
    """Start the query of ``plan`` with ``stage`` as its batch function, and the deadline clock."""
    keep_the_engine(spark, config)
    started: list[StreamingQuery] = []
    if config.has_deadlines:
        # Before the query starts: its first batch already reports deadlines.
        stage.clock = clock.DeadlineClock(config, alive=lambda: started[0].isActive)
        stage.clock.schedule.add(clock.registered_deadlines(spark, config))
    query = start_foreach_batch(plan(spark, config), stage, {NO_DATA_BATCHES: "false"})
    started.append(query)
    if stage.clock is not None:
        stage.clock.start()
    return query


NO_JAVAC = (
    "no JDK compiler (javac) here: the counter runs on its Python engine, about a fifth "
    'of the JVM engine\'s speed; set [pipeline] counter_engine = "jvm" to run that one, '
    "compiled by the Eclipse compiler"
)


def engine_here(config: PipelineConfig) -> tuple[PipelineConfig, str | None]:
    """The pipeline with the counter engine this machine runs, and a line to say if it chose.

    The JVM engine unless the pipeline file (or ``--counter-engine``) chose one,
    or no JDK compiler is found: then the Python engine, which needs no
    compiler of its own, and a line that says so (not an error).
    """
    from fusion import jvm

    if "counter_engine" in config.pipeline.model_fields_set or jvm.find_javac() is not None:
        return config, None
    section = config.pipeline.model_copy(update={"counter_engine": "python"})
    return config.model_copy(update={"pipeline": section}), NO_JAVAC


ENGINE_FILE = "fusion-counter-engine"  # in the counter's checkpoint: which engine wrote its state


def keep_the_engine(spark: SparkSession, config: PipelineConfig) -> None:
    """Stop with one line if the counter's checkpoint holds the other engine's state.

    Both engines keep the same state (name, schema, TTL), but Spark records
    which operator wrote a checkpoint's state and refuses another on restart
    (the JVM's ``transformWithState`` is not PySpark's: the query fails with
    ``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``). Checkpoints
    from before the Python engine came back were written by the JVM one.
    """
    files = CheckpointFiles(spark, config.checkpoint(config.counter_query))
    engine = config.pipeline.counter_engine
    if files.exists("offsets"):
        written = (files.read_text(ENGINE_FILE) or "jvm").strip()
        if written != engine:
            raise ConfigError(
                "[pipeline] counter_engine",
                engine,
                f"the counter's state in {files.uri} was written by the {written} engine, "
                f'which Spark does not let another read on; set counter_engine = "{written}" '
                f"(or fusion run --counter-engine {written}), or delete the pipeline's "
                "checkpoints to start afresh",
            )
    files.write_text(ENGINE_FILE, engine)
