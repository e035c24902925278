"""The counter query: Spark keyed state over the ack topic, one ready event per complete key.

The acks are grouped by join key into ``transformWithState`` (RocksDB state
store, checkpointed). Its processor keeps each key's :class:`KeyState` and
applies :func:`fusion.counter.decide`; it emits ``ready`` rows for keys that
just completed and ``dead`` rows for acks it rejected. A foreachBatch sink
then publishes, per micro-batch and in one Kafka transaction with the batch
id marker (:mod:`fusion.output`), the dead rows to the DLQ topic and the
ready events to the ready topic, keyed by join key.

Spark commits the state and the input offsets of a batch only after that
transaction committed. A crash before the commit replays the batch from the
same state, so it computes the same fires; if the transaction had committed,
the marker says so and the replay publishes nothing. A read_committed reader
of the ready topic therefore sees each complete key exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from acks.contract import ACK_SPARK_SCHEMA
from fusion.config import PipelineConfig
from fusion.counter import AckSeen, KeyState, decide
from fusion.events import DeadLetter, ReadyEvent, now_iso
from fusion.metrics import Metrics
from fusion.spark_io import BatchStage, read_kafka, start_foreach_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

STATE_SCHEMA = "seen ARRAY<STRING>, first_ack_at STRING, fired_at STRING"
OUTPUT_SCHEMA = (
    "kind STRING, key STRING, sources ARRAY<STRING>, first_ack_at STRING, fired_at STRING, "
    "reason STRING, raw STRING, topic STRING, partition INT, offset BIGINT"
)


class AckCounter(StatefulProcessor):
    """Spark's side of the counter: state I/O around :func:`fusion.counter.decide`."""

    def __init__(self, sources: list[str]) -> None:
        self.sources = frozenset(sources)

    def init(self, handle: Any) -> None:
        self.state = handle.getValueState("key_state", STATE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from pyspark.sql import Row

        join_key = key[0]
        before = None
        stored = self.state.get()  # one round trip to the state server, None for a new key
        if stored is not None:
            seen, first, fired = stored
            before = KeyState(frozenset(seen), first, fired)
        acks = [AckSeen(r.source, r.acked_at, r.raw, r.topic, r.partition, r.offset) for r in rows]
        decision = decide(join_key, before, acks, self.sources, now_iso())
        after = decision.state
        if after is not None and after != before:
            self.state.update((sorted(after.seen), after.first_ack_at, after.fired_at))
        if decision.new_key:
            # Lets the sink count keys, so the status line can show the pending ones.
            yield Row(
                kind="new", key=join_key, sources=None, first_ack_at=None, fired_at=None,
                reason=None, raw=None, topic=None, partition=None, offset=None,
            )  # fmt: skip
        if decision.ready is not None:
            ready = decision.ready
            yield Row(
                kind="ready", key=join_key, sources=ready.sources,
                first_ack_at=ready.first_ack_at, fired_at=ready.fired_at,
                reason=None, raw=None, topic=None, partition=None, offset=None,
            )  # fmt: skip
        for ack, reason in decision.rejected:
            yield Row(
                kind="dead", key=join_key, sources=None, first_ack_at=None, fired_at=None,
                reason=reason, raw=ack.raw, topic=ack.topic, partition=ack.partition,
                offset=ack.offset,
            )  # fmt: skip

    def close(self) -> None:
        pass


PANDAS_STATE_SCHEMA = "seen STRING, first_ack_at STRING, fired_at STRING"
_OUTPUT_COLUMNS = [
    "kind", "key", "sources", "first_ack_at", "fired_at", "reason", "raw", "topic", "partition",
    "offset",
]  # fmt: skip


def count_with_pandas_state(sources: frozenset[str]) -> Any:
    """The same decision as :class:`AckCounter`, for ``applyInPandasWithState``.

    Spark ships each key's state with its rows (Arrow), so a key costs no round
    trip to a state server; the seen sources are stored comma-joined.
    """

    def count(key: tuple[str], frames: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        join_key = key[0]
        before = None
        if state.exists:
            seen, first, fired = state.get
            before = KeyState(frozenset(seen.split(",")), first, fired)
        acks = [
            AckSeen(r.source, r.acked_at, r.raw, r.topic, r.partition, r.offset)
            for frame in frames
            for r in frame.itertuples(index=False)
        ]
        decision = decide(join_key, before, acks, sources, now_iso())
        after = decision.state
        if after is not None and after != before:
            state.update((",".join(sorted(after.seen)), after.first_ack_at, after.fired_at))
        rows: list[tuple[Any, ...]] = []
        if decision.new_key:
            rows.append(("new", join_key, None, None, None, None, None, None, None, None))
        if decision.ready is not None:
            ready = decision.ready
            rows.append(("ready", join_key, ready.sources, ready.first_ack_at, ready.fired_at,
                         None, None, None, None, None))  # fmt: skip
        for ack, reason in decision.rejected:
            rows.append(("dead", join_key, None, None, None, reason, ack.raw, ack.topic,
                         ack.partition, ack.offset))  # fmt: skip
        if rows:
            yield pd.DataFrame(rows, columns=_OUTPUT_COLUMNS)

    return count


class PublishCounterOutput(BatchStage):
    """foreachBatch sink of the counter: dead letters and ready events, exactly once."""

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, "counter")

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.collect()
        if not rows:
            return
        dead = [r for r in rows if r.kind == "dead"]
        ready = [r for r in rows if r.kind == "ready"]
        out = [(self.config.dlq_topic, row.key or None, _dead_letter(row)) for row in dead]
        for row in ready:
            event = ReadyEvent(
                key=row.key,
                sources=list(row.sources),
                first_ack_at=row.first_ack_at,
                fired_at=row.fired_at,
            )
            out.append((self.config.ready_topic, event.key, event.to_bytes()))
        if not self.output.publish(batch_id, out):
            return
        self.metrics.add("counter.dlq", len(dead))
        self.metrics.add("counter.fired", len(ready))
        self.metrics.add("counter.keys", sum(1 for r in rows if r.kind == "new"))


def _dead_letter(row: Any) -> bytes:
    letter = DeadLetter.of(
        row.reason,
        "counter",
        None,
        (row.topic, row.partition, row.offset),
        row.raw.encode() if row.raw is not None else None,
        row.key or None,
    )
    return letter.to_bytes()


def parsed_acks(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The ack topic as rows of (k, source, acked_at, raw, topic, partition, offset)."""
    from pyspark.sql import functions as F

    stream = read_kafka(spark, config, config.acks_topic)
    ack = F.from_json(F.col("value").cast("string"), ACK_SPARK_SCHEMA)
    return stream.select(
        # A malformed ack still needs a group; its Kafka key (or "") gets it to the processor.
        F.coalesce(ack["key"], F.col("key").cast("string"), F.lit("")).alias("k"),
        ack["source"].alias("source"),
        ack["acked_at"].alias("acked_at"),
        F.col("value").cast("string").alias("raw"),
        "topic",
        "partition",
        "offset",
    )


def start_counter(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    grouped = parsed_acks(spark, config).groupBy("k")
    if config.pipeline.counter == "pandas-state":
        counted = grouped.applyInPandasWithState(
            count_with_pandas_state(frozenset(config.source_names)),
            outputStructType=OUTPUT_SCHEMA,
            stateStructType=PANDAS_STATE_SCHEMA,
            outputMode="Append",
            timeoutConf="NoTimeout",
        )
    else:
        counted = grouped.transformWithState(
            statefulProcessor=AckCounter(list(config.source_names)),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="None",
        )
    return start_foreach_batch(counted, PublishCounterOutput(config, metrics))
