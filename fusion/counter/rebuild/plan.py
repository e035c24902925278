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
   :func:`fusion.counter.rebuild.keys.rebuilt_state` in a Python task.

The driver reads nothing of it: Spark evaluates the plan in the query's
first batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from fusion.core import RESERVED_FIELD, PipelineConfig, RefPart, iso_from_ms
from fusion.counter import STATE_COLUMNS, Now
from fusion.counter.rebuild import slots
from fusion.counter.rebuild.keys import Doc, History, rebuilt_state
from fusion.counter.rebuild.scans import arrow, hits_of, slices
from fusion.kafka import lag
from indexers import content_digest, is_tombstone, record_content

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

DOC_SCHEMA = (
    "k STRING, source STRING, version BIGINT, digest STRING, deleted BOOLEAN, ref STRING, "
    "ref_version BIGINT, slot BOOLEAN, via ARRAY<BIGINT>"
)
STATE_ROW_SCHEMA = "k STRING, " + ", ".join(f"{name} {kind}" for name, kind in STATE_COLUMNS)
EVENT_SCHEMA = (
    "key STRING, kind STRING, fired_at STRING, expired_at STRING, first_ack_at STRING, "
    "versions MAP<STRING, BIGINT>, deleted ARRAY<STRING>, "
    "refs MAP<STRING, STRUCT<id: STRING, version: BIGINT, changes: BIGINT, via: ARRAY<BIGINT>>>"
)


def initial_state(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """Every key's rebuilt state: ``k`` and the state's columns (see the module docstring)."""
    from pyspark.sql import functions as F

    docs = (
        documents(spark, config)
        .groupBy("k")
        .agg(F.collect_list(F.struct(*DOC_COLUMNS[1:])).alias("docs"))
    )
    keyed = docs.join(history(spark, config), "k", "full_outer")
    ms = int(time.time() * 1000)
    return keyed.mapInArrow(partial(_states, Now(iso_from_ms(ms), ms)), STATE_ROW_SCHEMA)


def documents(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """Each source document in Elasticsearch: key, source, version, content digest."""
    # A dimension's rows are no key's; children are keyed by their own ids (their slots come
    # back from the keys' events).
    own = [s for s in config.sources if not (s.dimension or s.children)]
    parts = slices(spark, [(config.index_of(s), s.name) for s in own])
    # (The enriched index is walked by the pipeline's key_field, its documents' own.)
    docs = parts.mapInArrow(partial(_scan, config), DOC_SCHEMA)
    if not config.dimensions:
        return docs
    return slots.with_rows(spark, config, docs)


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
        F.max_by("refs", at).alias("refs"),
    )
    fired_at = F.when(F.col("fire.kind") == "ready", F.col("fire.at")).alias("fired_at")
    unfired = F.coalesce(F.col("fire.kind") == "deleted", F.lit(False)).alias("unfired")
    columns = ("first_ack_at", "versions", "deleted", "refs")
    return last.select("k", fired_at, "expired_at", *columns, unfired)


def enriched_events(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The enriched index's documents as the events that made them (``value``, ``topic``).

    A complete document is its key's ready event; a partial one (``on_timeout
    = "partial"``) its incomplete event.
    """
    parts = slices(spark, [(config.enriched_index, "")])
    return parts.mapInArrow(partial(_scan_enriched, config), "value STRING, topic STRING")


def _scan_enriched(
    config: PipelineConfig, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Task: the enriched documents of the slices in ``batches``, as events."""
    import pyarrow as pa

    search = {"source": [f"{RESERVED_FIELD}.*"]}
    for _, hits in hits_of(config, batches, search):
        rows = [_as_event(config, hit) for hit in hits]
        yield pa.RecordBatch.from_pylist(rows, schema=arrow("value STRING, topic STRING"))


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

    for source, hits in hits_of(config, batches, {"source": True, "version": True}):
        references = config.references_from(source)
        rows = [_doc(hit, source) for hit in hits]
        if references:
            rows += [slot for hit in hits for slot in slots.slot_docs(hit, references)]
        yield pa.RecordBatch.from_pylist(rows, schema=arrow(DOC_SCHEMA))


def _doc(hit: dict[str, Any], source: str) -> dict[str, Any]:
    row = {"k": hit["_id"], "source": source, "version": hit["_version"]}
    row |= {"ref": None, "ref_version": 0, "slot": False, "via": []}
    if is_tombstone(hit["_source"]):
        return row | {"digest": None, "deleted": True}
    try:
        # The indexer's digest: of the record, without what Fusion kept in the document.
        digest: str | None = content_digest(record_content(hit["_source"]))
    except (ValueError, RecursionError, TypeError):
        digest = None  # unknown: its next version counts as a change
    return row | {"digest": digest, "deleted": False}


def _states(now: Now, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Task: each key's rebuilt state from its documents and its history."""
    import pyarrow as pa

    for batch in batches:
        rows = []
        for row in batch.to_pylist():
            docs = [_doc_of(d) for d in row["docs"] or []]
            past = History(
                row["fired_at"],
                row["expired_at"],
                row["first_ack_at"],
                dict(row["versions"] or {}),
                tuple(row["deleted"] or ()),
                bool(row["unfired"]),
                _refs(row["refs"]),
            )
            state = rebuilt_state(docs, past, now)
            if state is not None:
                rows.append(dict(zip(_STATE_NAMES, (row["k"], *state.to_row()), strict=True)))
        yield pa.RecordBatch.from_pylist(rows, schema=arrow(STATE_ROW_SCHEMA))


_STATE_NAMES = ("k", *(name for name, _ in STATE_COLUMNS))
DOC_COLUMNS = tuple(column.strip().split(" ", 1)[0] for column in DOC_SCHEMA.split(","))


def _refs(refs: Any) -> dict[str, RefPart]:
    """An event's ``refs`` as ``from_json`` read them (a map of structs, a list of pairs)."""
    pairs = refs.items() if isinstance(refs, dict) else (refs or [])
    return {
        name: RefPart(
            id=ref["id"], version=ref["version"] or 0, changes=ref["changes"] or 0,
            via=tuple(ref.get("via") or ()),
        )
        for name, ref in pairs
        if ref is not None
    }  # fmt: skip


def _doc_of(d: dict[str, Any]) -> Doc:
    ref_version = int(d["ref_version"] or 0)
    return Doc(d["source"], int(d["version"]), d["digest"], bool(d["deleted"]), d["ref"],
               ref_version, bool(d["slot"]), tuple(d["via"] or ()))  # fmt: skip
