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
marker (:mod:`fusion.runtime.exactly_once`), keyed by join key.

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

import json
from collections import Counter
from typing import TYPE_CHECKING

from acks.contract import ACK_SPARK_SCHEMA
from fusion.core.config import PipelineConfig
from fusion.core.events import DeadLetter
from fusion.counter.decisions import Rules
from fusion.runtime.exactly_once import OutRecord
from fusion.runtime.metrics import Metrics
from fusion.runtime.stage import BatchStage, read_kafka, start_foreach_batch
from fusion.runtime.tasks import Counts, Job, Work, column

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


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


def rules_json(rules: Rules) -> str:
    """The rules as the JVM counter reads them (``fusion.counter.Json.rules``)."""
    return json.dumps(
        {
            "sources": sorted(rules.sources),
            "required": sorted(rules.required),
            "timeouts_ms": dict(rules.timeouts_ms),
            "on_update": rules.on_update,
        }
    )


def counted_acks(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The acks through the JVM counter's keyed state: one row per event.

    Its columns: ``kind, key, event, reason, raw, topic, partition, offset``."""
    from pyspark.sql import DataFrame

    ttl = config.pipeline.state_ttl
    counter = spark._jvm.fusion.counter.CounterQuery  # type: ignore[union-attr]
    jdf = counter.count(
        parsed_acks(spark, config)._jdf,
        rules_json(Rules.of(config)),
        -1 if ttl is None else int(ttl * 1000),
    )
    return DataFrame(jdf, spark)


def start_counter(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    counted = counted_acks(spark, config)
    conf = {NO_DATA_BATCHES: str(runs_idle_batches(config)).lower()}
    return start_foreach_batch(counted, CounterBatch(config, metrics), conf)
