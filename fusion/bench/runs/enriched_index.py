"""What a benchmark reads of the enriched index: a wave's documents, and when the last was written.

A benchmark's waves key their records ``<prefix>-<n>``: a prefix query on the
pipeline's key field counts a wave's enriched documents and finds its last.
"""

from __future__ import annotations

from datetime import datetime

from elasticsearch import Elasticsearch

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
