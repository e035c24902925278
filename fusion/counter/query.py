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
from typing import TYPE_CHECKING

from fusion.core import PipelineConfig
from fusion.counter import clock
from fusion.counter.decisions import Rules
from fusion.counter.engine import engine_of, keep_the_engine
from fusion.counter.rebuild import initial_state
from fusion.counter.task import EventOutputs, PublishEvents
from fusion.enricher import enrich_spec
from fusion.observe import Metrics
from fusion.spark import (
    BatchStage,
    Job,
    TaskCount,
    Work,
    read_with_clock,
    resume,
    start_foreach_batch,
    task_counts,
)
from fusion.topology import Query, topology_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


# A micro-batch only when input came (the clock's ticks are input): see start_counter.
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


class CounterBatch(BatchStage):
    """The driver side of the counter: its tasks publish the events of each state partition."""

    def __init__(self, config: PipelineConfig, metrics: Metrics, query: Query) -> None:
        super().__init__(config, metrics, query.name, "counter")
        self.enriches = query.enriches
        self.outputs = EventOutputs.of(config)
        self.enrichment = enrich_spec(config) if query.enriches else None
        self.clock: clock.DeadlineClock | None = None  # with deadlines: see start_counter

    def work(self) -> Work:
        return PublishEvents(self.outputs, self.enrichment)

    def counts_to_commit(self, batch_ms: int, counts: dict[str, int]) -> dict[str, int]:
        plain, buckets = clock.split_counts(counts)
        if self.clock is not None:
            self.clock.batch_done(batch_ms, buckets)
        return plain

    def columns(self, batch: DataFrame) -> DataFrame:
        return batch

    def run(self, batch: DataFrame, job: Job) -> list[TaskCount]:
        if self.enriches:
            return super().run(batch, job)  # a Python task enriches what fired
        # Nothing to enrich here: the events go from the JVM processor to Kafka directly.
        spark, outputs = batch.sparkSession, self.outputs
        events = spark._jvm.fusion.counter.CounterEvents  # type: ignore[union-attr]
        topics = {
            "ready": outputs.ready,
            "updated": outputs.updates,
            "incomplete": outputs.incomplete,
            "dlq": outputs.dlq,
            "resolution_ms": str(outputs.deadline_resolution_ms),
        }
        return task_counts(events.publish(batch._jdf, self.spec(job, spark), json.dumps(topics)))


def parsed_acks(spark: SparkSession, config: PipelineConfig, query: Query) -> DataFrame:
    """The ack topic as rows of the fields the counter reads, plus where each ack came from.

    Parsed on the executors by ``fusion.counter.AckParser``, which reads each
    ack as ``from_json(value, ACK_SPARK_SCHEMA)`` would (malformed ones too),
    at about 1.5 times its rate. A malformed ack without a join key is grouped
    by its Kafka key (or ""), so that it still reaches the processor's dead letters.

    With deadlines, the clock topic is read too: its ticks make micro-batches
    (which fire due timers) and are dropped here, before the acks are grouped.
    """
    from pyspark.sql import DataFrame

    stream = read_with_clock(spark, config, query.name, *query.reads)
    parser = spark._jvm.fusion.counter.AckParser  # type: ignore[union-attr]
    return DataFrame(parser.parse(stream._jdf), spark)


def counted_acks(spark: SparkSession, config: PipelineConfig, query: Query) -> DataFrame:
    """The acks through the counter's keyed state (the configured engine): a row per event.

    Its columns: ``kind, key, event, reason, raw, topic, partition, offset``."""
    acks, rules = parsed_acks(spark, config, query), Rules.of(config)
    return engine_of(config).count(acks, rules, restored_state(spark, config))


def restored_state(spark: SparkSession, config: PipelineConfig) -> DataFrame | None:
    """The counter's rebuilt state when its query starts without its checkpoint, else None."""
    if not resume.rebuilding(spark, config, topology_of(config).counter_query):
        return None
    return initial_state(spark, config)


def start_counter(
    spark: SparkSession, config: PipelineConfig, query: Query, metrics: Metrics
) -> StreamingQuery:
    """Start the counter; with deadlines, its clock too (:mod:`fusion.counter.clock`).

    The counter runs no micro-batch without new input (an empty batch of
    ``transformWithState`` is a job over every state partition: on two cores,
    one per trigger took most of the machine while nothing arrived); the
    clock's ticks are the input that fires deadlines on time.
    """
    stage = CounterBatch(config, metrics, query)
    return start_with_clock(spark, config, stage, counted_acks(spark, config, query))


def start_with_clock(
    spark: SparkSession, config: PipelineConfig, stage: CounterBatch, counted: DataFrame
) -> StreamingQuery:
    """Start ``counted`` (the counter's rows) into ``stage``, and with deadlines the clock.

    ``counted``: the stages layout's :func:`counted_acks`, or the single query's
    own plan (:func:`fusion.single.indexed_and_counted`); either way the counter's state.
    """
    keep_the_engine(spark, config)
    started: list[StreamingQuery] = []
    if config.has_deadlines:
        # Before the query starts: its first batch already reports deadlines.
        stage.clock = clock.DeadlineClock(config, alive=lambda: started[0].isActive)
        stage.clock.schedule.add(clock.registered_deadlines(spark, config))
    query = start_foreach_batch(counted, stage, {NO_DATA_BATCHES: "false"})
    started.append(query)
    if stage.clock is not None:
        stage.clock.start()
    return query
