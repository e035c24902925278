"""Fetch the source documents of ready keys from Elasticsearch, counting every request.

Two modes:

- ``per-source`` (the original design): one GET per source per key, N requests a key;
- ``batched`` (default): one ``_mget`` for up to ``mget_chunk`` documents, so a
  micro-batch of K ready keys costs ceil(K·N / mget_chunk) requests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from elasticsearch import Elasticsearch, NotFoundError

from fusion.config import PipelineConfig
from fusion.enricher import FoundDoc
from fusion.metrics import Metrics

Found = dict[str, dict[str, FoundDoc]]  # key -> source name -> document
T = TypeVar("T")


def fetch(
    es: Elasticsearch, config: PipelineConfig, keys: Sequence[str], metrics: Metrics
) -> Found:
    """Documents of every source for ``keys``; a key lacks the sources not found."""
    if config.pipeline.lookup == "per-source":
        return _per_source(es, config, keys, metrics)
    return _batched(es, config, keys, metrics)


def _per_source(
    es: Elasticsearch, config: PipelineConfig, keys: Sequence[str], metrics: Metrics
) -> Found:
    found: Found = {key: {} for key in keys}
    for key in keys:
        for source in config.sources:
            metrics.add("enricher.es_requests")
            try:
                hit = es.get(index=config.index_of(source), id=key)
            except NotFoundError:
                continue
            found[key][source.name] = FoundDoc(hit["_source"], hit["_version"])
    return found


def _batched(
    es: Elasticsearch, config: PipelineConfig, keys: Sequence[str], metrics: Metrics
) -> Found:
    found: Found = {key: {} for key in keys}
    wanted = [(key, source) for key in keys for source in config.sources]
    for chunk in _chunks(wanted, config.pipeline.mget_chunk):
        metrics.add("enricher.es_requests")
        docs = [{"_index": config.index_of(source), "_id": key} for key, source in chunk]
        response = es.mget(docs=docs)
        for (key, source), hit in zip(chunk, response["docs"], strict=True):
            if hit.get("found"):
                found[key][source.name] = FoundDoc(hit["_source"], hit["_version"])
    return found


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
