"""The counter's state rebuilt from Elasticsearch and Kafka, for a query without its checkpoint.

``fusion run --rebuild-state`` (:mod:`fusion.spark.resume`) starts the
counter's query with this state (``transformWithState``'s initial state); a
plan of Spark jobs whose per-record work runs on the executors:

1. **documents**: a Python task per source index and slice walks the index
   (a point in time, :mod:`fusion.elastic.scan`) and emits each document's
   key, source, version and content digest (the indexer's own digest);
2. **events**: the ready, updates and incomplete topics, read committed by
   Spark's Kafka source and parsed by ``from_json``, reduced per key to its
   fire, its report and its latest event's versions (JVM aggregates);
3. **state**: both joined by key (JVM), each key's state built by
   :func:`fusion.counter.restore.rebuilt_state` in a Python task.

The driver reads nothing of it: Spark evaluates the plan in the query's
first batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from fusion.core.config import RESERVED_FIELD, PipelineConfig
from fusion.core.events import iso_from_ms
from fusion.counter.decisions import Now
from fusion.counter.key_state import STATE_COLUMNS
from fusion.counter.restore import Doc, History, rebuilt_state
from fusion.elastic import client as es_client
from fusion.elastic import scan
from fusion.elastic.retry import RetryPolicy
from fusion.kafka import lag
from indexers.records import content_digest, is_tombstone

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

DOC_SCHEMA = "k STRING, source STRING, version BIGINT, digest STRING, deleted BOOLEAN"
STATE_ROW_SCHEMA = "k STRING, " + ", ".join(f"{name} {kind}" for name, kind in STATE_COLUMNS)
EVENT_SCHEMA = (
    "key STRING, kind STRING, fired_at STRING, expired_at STRING, first_ack_at STRING, "
    "versions MAP<STRING, BIGINT>, deleted ARRAY<STRING>"
)


def initial_state(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """Every key's rebuilt state: ``k`` and the state's columns (see the module docstring)."""
    from pyspark.sql import functions as F

    docs = (
        documents(spark, config)
        .groupBy("k")
        .agg(F.collect_list(F.struct("source", "version", "digest", "deleted")).alias("docs"))
    )
    keyed = docs.join(history(spark, config), "k", "full_outer")
    ms = int(time.time() * 1000)
    return keyed.mapInArrow(partial(_states, Now(iso_from_ms(ms), ms)), STATE_ROW_SCHEMA)


def documents(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """Each source document in Elasticsearch: key, source, version, content digest."""
    parts = _slices(spark, [(config.index_of(s), s.name) for s in config.sources])
    # (The enriched index is walked by the pipeline's key_field, its documents' own.)
    return parts.mapInArrow(partial(_scan, config), DOC_SCHEMA)


def history(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """Per key what the counter published: ``fired_at``, ``expired_at``, ``first_ack_at``,
    ``versions`` (of its latest event).

    From the event topics; when retention already deleted events of the ready
    topic, also from the enriched index (each enriched document says when its
    key fired, from which versions), so that a key whose event is gone is not
    taken for one that never fired.
    """
    from pyspark.sql import functions as F

    topics = [config.ready_topic, config.updates_topic, config.incomplete_topic]
    options = config.kafka.as_spark_options() | {
        "subscribe": ",".join(topics),
        "startingOffsets": "earliest",
        "endingOffsets": "latest",
        "kafka.isolation.level": "read_committed",
        "failOnDataLoss": "false",
    }
    raw = spark.read.format("kafka").options(**options).load()
    values = raw.select(F.col("value").cast("string").alias("value"), "topic")
    if any(low > 0 for low, _ in lag.watermarks(config, config.ready_topic).values()):
        values = values.unionByName(enriched_events(spark, config))
    event = F.from_json(F.col("value"), EVENT_SCHEMA)
    events = values.select(event.alias("e"), "topic").select("e.*", "topic")
    events = events.where("key IS NOT NULL")
    incomplete = F.col("topic") == F.lit(config.incomplete_topic)
    at = F.coalesce("fired_at", "expired_at")
    # A key fired by its latest ready event, unless a deleted event (its rows gone) came after.
    fire = F.when(F.col("kind").isin("ready", "deleted"), F.struct(at.alias("at"), "kind"))
    last = events.groupBy(F.col("key").alias("k")).agg(
        F.max(fire).alias("fire"),
        F.max(F.when(incomplete, F.col("expired_at"))).alias("expired_at"),
        F.min("first_ack_at").alias("first_ack_at"),
        F.max_by("versions", at).alias("versions"),
        F.max_by("deleted", at).alias("deleted"),
    )
    fired_at = F.when(F.col("fire.kind") == "ready", F.col("fire.at")).alias("fired_at")
    unfired = F.coalesce(F.col("fire.kind") == "deleted", F.lit(False)).alias("unfired")
    columns = ("first_ack_at", "versions", "deleted")
    return last.select("k", fired_at, "expired_at", *columns, unfired)


def enriched_events(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The enriched index's documents as the events that made them (``value``, ``topic``).

    A complete document is its key's ready event; a partial one (``on_timeout
    = "partial"``) its incomplete event.
    """
    parts = _slices(spark, [(config.enriched_index, "")])
    return parts.mapInArrow(partial(_scan_enriched, config), "value STRING, topic STRING")


def _slices(spark: SparkSession, indexes: list[tuple[str, str]]) -> DataFrame:
    """A row per (index, source) and slice: one Spark task each."""
    slices = max(1, spark.sparkContext.defaultParallelism // len(indexes))
    rows = [(index, source, n, slices) for index, source in indexes for n in range(slices)]
    return spark.createDataFrame(
        spark.sparkContext.parallelize(rows, len(rows)),
        "index STRING, source STRING, slice INT, slices INT",
    )


def _scan_enriched(
    config: PipelineConfig, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Task: the enriched documents of the slices in ``batches``, as events."""
    import pyarrow as pa

    search = {"source": [f"{RESERVED_FIELD}.*"]}
    for _, hits in _hits(config, batches, search):
        rows = [_as_event(config, hit) for hit in hits]
        yield pa.RecordBatch.from_pylist(rows, schema=_arrow("value STRING, topic STRING"))


def _as_event(config: PipelineConfig, hit: dict[str, Any]) -> dict[str, Any]:
    own = hit.get("_source", {}).get(RESERVED_FIELD, {})
    at, versions = own.get("fired_at"), own.get("versions") or {}
    if own.get("complete", True):
        event = {"key": hit["_id"], "kind": "ready", "fired_at": at, "versions": versions}
        return {"value": json.dumps(event), "topic": config.ready_topic}
    event = {"key": hit["_id"], "expired_at": at, "versions": versions}
    return {"value": json.dumps(event), "topic": config.incomplete_topic}


def _scan(config: PipelineConfig, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Task: the source documents of the slices in ``batches``: key, source, version, digest."""
    import pyarrow as pa

    for source, hits in _hits(config, batches, {"source": True, "version": True}):
        rows = [_doc(hit, source) for hit in hits]
        yield pa.RecordBatch.from_pylist(rows, schema=_arrow(DOC_SCHEMA))


def _hits(
    config: PipelineConfig, batches: Iterator[pa.RecordBatch], search: dict[str, Any]
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(source, a page of hits) of the slices in ``batches`` (index, source, slice, slices)."""
    es = es_client.connect(config.elasticsearch)
    retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
    for batch in batches:
        for index, source, n, slices in zip(*batch.to_pydict().values(), strict=True):
            field = config.sort_field(config.source(source)) if source else config.key_field
            for hits in scan.pages(es, index, field, (n, slices), retry, **search):
                yield source, hits


def _doc(hit: dict[str, Any], source: str) -> dict[str, Any]:
    row = {"k": hit["_id"], "source": source, "version": hit["_version"]}
    if is_tombstone(hit["_source"]):
        return row | {"digest": None, "deleted": True}
    try:
        digest: str | None = content_digest(hit["_source"])
    except (ValueError, RecursionError, TypeError):
        digest = None  # unknown: its next version counts as a change
    return row | {"digest": digest, "deleted": False}


def _states(now: Now, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Task: each key's rebuilt state from its documents and its history."""
    import pyarrow as pa

    for batch in batches:
        rows = []
        for row in batch.to_pylist():
            docs = [
                Doc(d["source"], int(d["version"]), d["digest"], bool(d["deleted"]))
                for d in row["docs"] or []
            ]
            past = History(
                row["fired_at"],
                row["expired_at"],
                row["first_ack_at"],
                dict(row["versions"] or {}),
                tuple(row["deleted"] or ()),
                bool(row["unfired"]),
            )
            state = rebuilt_state(docs, past, now)
            if state is not None:
                rows.append(dict(zip(_STATE_NAMES, (row["k"], *state.to_row()), strict=True)))
        yield pa.RecordBatch.from_pylist(rows, schema=_arrow(STATE_ROW_SCHEMA))


_STATE_NAMES = ("k", *(name for name, _ in STATE_COLUMNS))


def _arrow(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL of STRING, BIGINT and BOOLEAN columns."""
    import pyarrow as pa

    kinds = {"STRING": pa.string(), "BIGINT": pa.int64(), "BOOLEAN": pa.bool_()}
    fields = [column.strip().split(" ", 1) for column in ddl.split(",")]
    return pa.schema([(name, kinds[kind.strip()]) for name, kind in fields])
