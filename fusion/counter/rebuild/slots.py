"""The dimension slots of a rebuilt state (:mod:`fusion.counter.rebuild`, docs/dimensions.md).

A key's slot is what its referrer's document names (``fusion.refs.<reference>``,
at the document's version) and what the dimension's index holds of that row
(its version and content digest, or nothing). The referrer's scan gives the
first (:func:`slot_docs`), a scan of each dimension's index the second; Spark
joins them by reference and id (JVM), and :func:`fusion.counter.rebuild.keys.Doc.seen`
makes each a slot.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from fusion.core import RESERVED_FIELD, PipelineConfig, Reference
from fusion.counter.rebuild.scans import arrow, hits_of, slices
from indexers import is_tombstone, row_of

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

ROW_SCHEMA = "dim STRING, id STRING, row_version BIGINT, row_digest STRING"


def slot_docs(hit: dict[str, Any], references: tuple[Reference, ...]) -> list[dict[str, Any]]:
    """A referrer document's slots, one per reference: the id it names (None: none), at its
    version; the row's version and digest come with the join."""
    source = hit["_source"]
    own = source.get(RESERVED_FIELD) if not is_tombstone(source) else None
    refs = own.get("refs", {}) if isinstance(own, dict) else {}
    return [
        {"k": hit["_id"], "source": r.name, "version": hit["_version"], "digest": None,
         "deleted": refs.get(r.name) is None, "ref": refs.get(r.name),
         "ref_version": 0, "slot": True}
        for r in references
    ]  # fmt: skip


def with_rows(spark: SparkSession, config: PipelineConfig, docs: DataFrame) -> DataFrame:
    """``docs`` with each slot's row filled in from the dimensions' indexes."""
    from pyspark.sql import functions as F

    dims = list(config.dimensions)
    parts = slices(spark, [(config.index_of(config.source(d)), d) for d in dims])
    rows = parts.mapInArrow(partial(_scan_rows, config), ROW_SCHEMA)
    slots = docs.where(F.col("slot"))
    found = (F.col("ref") == F.col("id")) & (F.col("source") == F.col("dim"))
    joined = slots.join(rows, found, "left").select(
        "k", "source", "version",
        F.col("row_digest").alias("digest"),
        (F.col("deleted") | F.col("row_version").isNull() | F.col("row_digest").isNull())
        .alias("deleted"),
        "ref",
        F.coalesce("row_version", F.lit(0)).cast("bigint").alias("ref_version"),
        "slot",
    )  # fmt: skip
    return docs.where(~F.col("slot")).unionByName(joined)


def row_records(hits: list[dict[str, Any]], references: list[str]) -> list[dict[str, Any]]:
    """A dimension index's rows: id, version, content digest (None: a deleted row), once for
    each of the ``references`` naming the dimension (``dim``: the reference, which the slots
    are joined by)."""
    out = []
    for hit in hits:
        row = row_of(hit)
        out += [{"dim": name, "id": hit["_id"], "row_version": row.version,
                 "row_digest": row.digest} for name in references]  # fmt: skip
    return out


def _scan_rows(
    config: PipelineConfig, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Task: the rows of the dimension index slices in ``batches``."""
    import pyarrow as pa

    for dimension, hits in hits_of(config, batches, {"source": True, "version": True}):
        rows = row_records(hits, [r.name for r in config.references_to(dimension)])
        yield pa.RecordBatch.from_pylist(rows, schema=arrow(ROW_SCHEMA))
