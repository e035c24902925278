"""Fetch the source documents of ready keys from Elasticsearch, counting every request.

Two modes:

- ``per-source`` (the original design): one GET per source per key, N requests a key;
- ``batched`` (default): one ``_mget`` for up to ``mget_chunk`` documents, so a
  micro-batch of K ready keys costs ceil(K·N / mget_chunk) requests.

Every request is retried with backoff while Elasticsearch is unreachable
(:mod:`fusion.elastic.retry`); a retry counts as another request. An index
that is gone (:class:`IndexGoneError`) or refused to the user
(:class:`IndexAccessError`) stops the query in both modes: it is the
deployment's fault, and no key would find its documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from elasticsearch import ApiError, Elasticsearch, NotFoundError

from fusion.core import RESERVED_FIELD
from fusion.elastic import (
    ACCESS_DENIED,
    IndexAccessError,
    IndexGoneError,
    RetryPolicy,
    call_with_retries,
    index_gone,
    mget_docs,
)
from fusion.enricher.document import FoundDoc
from fusion.enricher.spec import EnrichSpec, PartSource
from fusion.observe import Metrics, names
from indexers import is_tombstone

DocsByKey = dict[str, dict[str, FoundDoc]]  # key -> source name -> document
RowIds = Mapping[str, Mapping[str, str]]  # key -> dimension -> the id of the row it names
Target = tuple[str, PartSource | None]  # a document's _id, and its source (None: enriched)
# Where a key's enriched document is found: a name no source may have.
WRITTEN = RESERVED_FIELD
T = TypeVar("T")


def fetch(
    es: Elasticsearch,
    spec: EnrichSpec,
    keys: Sequence[str],
    metrics: Metrics,
    retry: RetryPolicy | None = None,
    rows: RowIds | None = None,
    written: bool = False,
) -> DocsByKey:
    """Documents of every source for ``keys``; a key lacks the sources not found.

    A dimension's row is looked up by the id ``rows`` gives for the key (docs/dimensions.md),
    each distinct row once however many keys name it. ``written``: each key's enriched
    document too, in the same requests, found under :data:`WRITTEN` (its version only).
    """
    retry = retry or RetryPolicy()
    rows = rows or {}
    enriched: list[Target] = [(key, None) for key in keys] if written else []
    targets = _wanted(spec, keys, rows) + enriched
    if spec.lookup == "per-source":
        fetched = _per_source(es, spec, targets, metrics, retry)
    else:
        fetched = _batched(es, spec, targets, metrics, retry)
    return _place(spec, keys, rows, fetched)


def _wanted(spec: EnrichSpec, keys: Sequence[str], rows: RowIds) -> list[Target]:
    """Each document to fetch once: (its _id, its source): a key's own sources' documents,
    and the distinct dimension rows the keys name."""
    own = spec.parts
    wanted: list[Target] = [(key, source) for key in keys for source in own]
    named = sorted({(dim, ref) for key in keys for dim, ref in rows.get(key, {}).items()})
    return wanted + [(ref, spec.source(dim)) for dim, ref in named]


def _place(spec: EnrichSpec, keys: Sequence[str], rows: RowIds, fetched: DocsByKey) -> DocsByKey:
    """``fetched`` (by _id, then source) as each key's documents: its own sources' (by the
    key), and the dimension rows it names (by their ids)."""
    dimensions = set(spec.dimensions)
    found: DocsByKey = {}
    for key in keys:
        found[key] = {n: d for n, d in fetched.get(key, {}).items() if n not in dimensions}
        for dim, ref in rows.get(key, {}).items():
            if dim in fetched.get(ref, {}):
                found[key][dim] = fetched[ref][dim]
    return found


def counted(
    call: Callable[[], T], what: str, metrics: Metrics, retry: RetryPolicy, indexes: str
) -> T:
    """``call()`` retried through outages, each attempt counted as one of the enricher's
    requests; a refusal to the user names ``indexes``."""

    def once() -> T:
        metrics.add(names.ENRICHER_ES_REQUESTS)
        return call()

    try:
        return call_with_retries(once, what, retry, metrics)
    except ApiError as exc:
        if exc.meta.status in ACCESS_DENIED:
            raise IndexAccessError(indexes, exc.meta.status, str(exc.message)) from None
        raise


def _per_source(
    es: Elasticsearch,
    spec: EnrichSpec,
    targets: Sequence[Target],
    metrics: Metrics,
    retry: RetryPolicy,
) -> DocsByKey:
    fetched: DocsByKey = {}
    for doc_id, source in targets:
        index = _index(spec, source)
        get = partial(es.get, index=index, id=doc_id, source=source is not None)
        try:
            hit = counted(get, f"GET {index}", metrics, retry, index)
        except NotFoundError as exc:
            if index_gone(exc):
                raise IndexGoneError(index, f"GET: {exc.message}") from None
            continue  # the index is there, the document is not
        _keep(fetched, doc_id, source, dict(hit))
    return fetched


def _index(spec: EnrichSpec, source: PartSource | None) -> str:
    return spec.enriched_index if source is None else source.index


def _keep(
    fetched: DocsByKey, doc_id: str, source: PartSource | None, hit: Mapping[str, Any]
) -> None:
    if source is None:
        fetched.setdefault(doc_id, {})[WRITTEN] = FoundDoc({}, hit["_version"])
    else:
        fetched.setdefault(doc_id, {})[source.name] = _found(source, hit)


def _found(source: PartSource, hit: Mapping[str, Any]) -> FoundDoc:
    """A source document as the enriched one nests it: without what Fusion kept in it (the
    key, the rows it names, its record's Kafka timestamp, which is where its latency starts).

    A deleted row's tombstone (:attr:`indexers.records.SourceRecord.source`) is
    found as deleted, with its version.
    """
    doc: dict[str, Any] = hit["_source"]
    own = doc.get(RESERVED_FIELD)
    at = own.get("ts") if isinstance(own, dict) else None
    record_ms = at if isinstance(at, int) and not isinstance(at, bool) else None
    if is_tombstone(doc):
        return FoundDoc({}, hit["_version"], deleted=True, record_ms=record_ms)
    kept = {"ts"} | ({"key"} if source.stores_key else set())
    kept |= {"refs"} if source.names_rows else set()
    if isinstance(own, dict) and kept & set(own):
        mine = {k: v for k, v in own.items() if k not in kept}
        doc = {k: v for k, v in doc.items() if k != RESERVED_FIELD} | (
            {RESERVED_FIELD: mine} if mine else {}
        )
    return FoundDoc(doc, hit["_version"], record_ms=record_ms)


def _batched(
    es: Elasticsearch,
    spec: EnrichSpec,
    targets: Sequence[Target],
    metrics: Metrics,
    retry: RetryPolicy,
) -> DocsByKey:
    fetched: DocsByKey = {}
    for chunk in _chunks(targets, spec.mget_chunk):
        docs = [_doc(spec, doc_id, source) for doc_id, source in chunk]
        indexes = ",".join(sorted({doc["_index"] for doc in docs}))
        hits = counted(partial(mget, es, docs), "_mget", metrics, retry, indexes)
        for (doc_id, source), hit in zip(chunk, hits, strict=True):
            if hit.get("found"):
                _keep(fetched, doc_id, source, dict(hit))
    return fetched


def _doc(spec: EnrichSpec, doc_id: str, source: PartSource | None) -> dict[str, Any]:
    """One document of an ``_mget``; of a key's enriched document only its version is
    read, and its source (every part the key has) is not worth sending."""
    doc: dict[str, Any] = {"_index": _index(spec, source), "_id": doc_id}
    return doc if source is not None else doc | {"_source": False}


def mget(es: Elasticsearch, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ``_mget``: its documents; :class:`~fusion.elastic.retry.Transient` on a shard error."""
    return mget_docs(es.mget(docs=docs))


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
