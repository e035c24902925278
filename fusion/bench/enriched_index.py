"""What a benchmark reads of the enriched index: a wave's documents, and when the last was written.

A benchmark's waves key their records ``<prefix>-<n>``: a prefix query on the
pipeline's key field counts a wave's enriched documents and finds its last.
"""

from __future__ import annotations

import statistics
from datetime import datetime

from elasticsearch import Elasticsearch, helpers

from fusion.core import PipelineConfig


def enriched_of(es: Elasticsearch, config: PipelineConfig, prefix: str) -> int:
    """How many keys ``<prefix>-…`` have an enriched document (0 before the index is there)."""
    query = {"prefix": {config.key_field: f"{prefix}-"}}
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index, query=query)
    return int(found.get("count", 0))


def last_enriched(es: Elasticsearch, config: PipelineConfig, prefix: str) -> float:
    """When the last enriched document of a key ``<prefix>-…`` was written (epoch s)."""
    es.indices.refresh(index=config.enriched_index)
    hits = es.search(
        index=config.enriched_index, size=1, sort=[{"fusion.enriched_at": "desc"}],
        source_includes=["fusion.enriched_at"],
        query={"prefix": {config.key_field: f"{prefix}-"}},
    )["hits"]["hits"]  # fmt: skip
    return datetime.fromisoformat(hits[0]["_source"]["fusion"]["enriched_at"]).timestamp()


def enriched_times(
    es: Elasticsearch, config: PipelineConfig, prefix: str | None = None
) -> dict[str, tuple[float, float | None]]:
    """Each enriched key's write, and its last record's Kafka timestamp as Fusion stored it
    (epoch s; None where none is stored): of every key, or of the keys ``<prefix>-…``."""
    es.indices.refresh(index=config.enriched_index)
    times = {}
    wanted = ["fusion.enriched_at", "fusion.last_record_at"]
    query = {"query": {"prefix": {config.key_field: f"{prefix}-"}}} if prefix else None
    scan = helpers.scan(es, query, index=config.enriched_index, _source=wanted, size=5000)
    for hit in scan:
        own = hit["_source"]["fusion"]
        recorded = own.get("last_record_at")
        times[hit["_id"]] = (
            datetime.fromisoformat(own["enriched_at"]).timestamp(),
            None if recorded is None else datetime.fromisoformat(recorded).timestamp(),
        )
    return times


def drained(es: Elasticsearch, config: PipelineConfig, since: float) -> str:
    """How a backlog drained from ``since`` (epoch s; the pipeline's first batch's start):
    its first key enriched, half, all."""
    written = sorted(at - since for at, _ in enriched_times(es, config).values())
    if not written:
        return "no key enriched"
    median = statistics.median_low(written)
    first, last = written[0], written[-1]
    return (
        f"first key {first:.1f} s after the first batch started, half {median:.1f} s, "
        f"all {last:.1f} s"
    )
