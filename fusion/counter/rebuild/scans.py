"""The rebuild's scans: Elasticsearch indexes in slices, a Spark task each (pure plumbing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fusion.core import PipelineConfig
from fusion.elastic import RetryPolicy, scan
from fusion.elastic import client as es_client

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession


def slices(spark: SparkSession, indexes: list[tuple[str, str]]) -> DataFrame:
    """A row per (index, source) and slice: one Spark task each."""
    each = max(1, spark.sparkContext.defaultParallelism // len(indexes))
    rows = [(index, source, n, each) for index, source in indexes for n in range(each)]
    return spark.createDataFrame(
        spark.sparkContext.parallelize(rows, len(rows)),
        "index STRING, source STRING, slice INT, slices INT",
    )


def hits_of(
    config: PipelineConfig, batches: Iterator[pa.RecordBatch], search: dict[str, Any]
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(source, a page of hits) of the slices in ``batches`` (index, source, slice, slices)."""
    es = es_client.connect(config.elasticsearch)
    retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
    for batch in batches:
        for index, source, n, each in zip(*batch.to_pydict().values(), strict=True):
            field = config.sort_field(config.source(source)) if source else config.key_field
            for hits in scan.pages(es, index, field, (n, each), retry, **search):
                yield source, hits


def arrow(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL of STRING, BIGINT, BOOLEAN and ARRAY<BIGINT> columns."""
    import pyarrow as pa

    kinds = {
        "STRING": pa.string(), "BIGINT": pa.int64(), "BOOLEAN": pa.bool_(),
        "ARRAY<BIGINT>": pa.list_(pa.int64()),
    }  # fmt: skip
    fields = [column.strip().split(" ", 1) for column in ddl.split(",")]
    return pa.schema([(name, kinds[kind.strip()]) for name, kind in fields])
