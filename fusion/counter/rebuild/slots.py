"""The dimension slots of a rebuilt state (:mod:`fusion.counter.rebuild`, docs/dimensions.md).

A key's slot is what its referrer's document names (``fusion.refs.<reference>``,
at the document's version) and what the dimension's index holds of that row
(its version and content digest, or nothing). The referrer's scan gives the
first (:func:`slot_docs`), a scan of each dimension's index the second; Spark
joins them by slot and id (JVM), and :func:`fusion.counter.rebuild.keys.Doc.seen`
makes each a slot. A chain's slot (``brand/company``) follows from its parent's
joined row, which names the next id, a join per level (:func:`with_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from fusion.core import MAX_HOPS, RESERVED_FIELD, PipelineConfig, Reference, Slot
from fusion.counter.rebuild.scans import arrow, hits_of, slices
from indexers import is_tombstone, row_of

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

ROW_SCHEMA = "dim STRING, id STRING, row_version BIGINT, row_digest STRING, row_refs STRING"


def slot_docs(hit: dict[str, Any], references: tuple[Reference, ...]) -> list[dict[str, Any]]:
    """A referrer document's slots, one per reference: the id it names (None: none), at its
    version; the row's version and digest come with the join."""
    source = hit["_source"]
    own = source.get(RESERVED_FIELD) if not is_tombstone(source) else None
    refs = own.get("refs", {}) if isinstance(own, dict) else {}
    return [
        {"k": hit["_id"], "source": r.name, "version": hit["_version"], "digest": None,
         "deleted": refs.get(r.name) is None, "ref": refs.get(r.name),
         "ref_version": 0, "slot": True, "via": []}
        for r in references
    ]  # fmt: skip


def with_rows(spark: SparkSession, config: PipelineConfig, docs: DataFrame) -> DataFrame:
    """``docs`` with each slot's row filled in from the dimensions' indexes, and the slots of
    chains, level by level, from the rows their parents hold (each level scans the
    dimensions' indexes again: a rebuild is rare, and nothing is held in memory)."""
    from pyspark.sql import functions as F

    dims = list(config.dimensions)
    parts = slices(spark, [(config.index_of(config.source(d)), d) for d in dims])
    rows = parts.mapInArrow(partial(_scan_rows, config), ROW_SCHEMA)
    level = docs.where(F.col("slot"))
    joined = []
    for depth in range(2, MAX_HOPS + 2):
        held = _joined(level, rows)
        joined.append(held.drop("row_refs"))
        chained = [s for s in config.key_slots if len(s.hops) == depth]
        if not chained:
            break
        level = _next_level(held, chained)
    out = docs.where(~F.col("slot"))
    for part in joined:
        out = out.unionByName(part)
    return out


def _joined(level: DataFrame, rows: DataFrame) -> DataFrame:
    """Slot docs joined with the rows they name (by slot and id; JVM)."""
    from pyspark.sql import functions as F

    found = (F.col("ref") == F.col("id")) & (F.col("source") == F.col("dim"))
    return level.join(rows, found, "left").select(
        "k", "source", "version",
        F.col("row_digest").alias("digest"),
        (F.col("deleted") | F.col("row_version").isNull() | F.col("row_digest").isNull())
        .alias("deleted"),
        "ref",
        F.coalesce("row_version", F.lit(0)).cast("bigint").alias("ref_version"),
        "slot", "via", "row_refs",
    )  # fmt: skip


def _next_level(held: DataFrame, chained: list[Slot]) -> DataFrame:
    """The chains' slot docs one hop on: the id the parent's row names, after its version."""
    from pyspark.sql import functions as F

    names = F.from_json(F.col("row_refs"), "MAP<STRING, STRING>")
    out = None
    for slot in chained:
        ref = F.when(~F.col("deleted"), F.element_at(names, F.lit(slot.hops[-1].name)))
        part = held.where(F.col("source") == F.lit(slot.parent)).select(
            "k", F.lit(slot.name).alias("source"), "version",
            F.lit(None).cast("string").alias("digest"),
            ref.isNull().alias("deleted"), ref.alias("ref"),
            F.lit(0).cast("bigint").alias("ref_version"), F.lit(True).alias("slot"),
            F.concat("via", F.array("ref_version")).alias("via"),
        )  # fmt: skip
        out = part if out is None else out.unionByName(part)
    assert out is not None  # chained is never empty
    return out


def row_records(hits: list[dict[str, Any]], references: list[str]) -> list[dict[str, Any]]:
    """A dimension index's rows: id, version, content digest (None: a deleted row) and the
    rows it names in turn, once for each of the slots ``references`` ending at the dimension
    (``dim``: the slot, which the slots are joined by)."""
    out = []
    for hit in hits:
        row = row_of(hit)
        refs = json.dumps(dict(row.refs)) if row.refs else None
        out += [{"dim": name, "id": hit["_id"], "row_version": row.version,
                 "row_digest": row.digest, "row_refs": refs} for name in references]  # fmt: skip
    return out


def _scan_rows(
    config: PipelineConfig, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Task: the rows of the dimension index slices in ``batches``."""
    import pyarrow as pa

    for dimension, hits in hits_of(config, batches, {"source": True, "version": True}):
        ending = [s.name for s in config.key_slots if s.dimension == dimension]
        rows = row_records(hits, ending)
        yield pa.RecordBatch.from_pylist(rows, schema=arrow(ROW_SCHEMA))
