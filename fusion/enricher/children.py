"""A group's children, found by a search on their parent keys (docs/children.md).

A children source's rows keep their parent's key in ``fusion.parent`` and a
sortable form of their ``order_by`` value in ``fusion.order``
(:mod:`indexers.children`). One search per children source and group of
parents (a ``terms`` query on the parents, sorted by parent, then order, then
the row's own key) is paged with ``search_after``; a parent's rows come in
their order, so a parent with more than ``max_children`` keeps the first ones,
and the search skips past the rest of them in one step. Nothing is held per
key between batches: the rows are in Elasticsearch, searchable before their
acks went out.

A page is sized by what the rows weigh (about ``task_chunk_bytes`` a page),
and a document's arrays by ``max_children_bytes``: past either cap the array
holds the first rows, and ``fusion.truncated`` says how many were left out.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from elasticsearch import Elasticsearch

from fusion.core import RESERVED_FIELD, STORED_OWN
from fusion.elastic import RetryPolicy
from fusion.enricher.document import ChildRows
from fusion.enricher.lookups import counted
from fusion.enricher.spec import EnrichSpec, PartSource
from fusion.observe import Metrics, names
from indexers import PAST_EVERY_ORDER

PARENT = f"{RESERVED_FIELD}.parent"
ORDER = f"{RESERVED_FIELD}.order"
TS = f"{RESERVED_FIELD}.ts"
PARENTS_PER_SEARCH = 1_000
FIRST_PAGE = 1_000
MAX_PAGE = 10_000  # Elasticsearch's max_result_window, by default


ArraysByKey = dict[str, dict[str, ChildRows]]  # key -> children source -> its array


def fetch_arrays(
    es: Elasticsearch,
    spec: EnrichSpec,
    keys: Sequence[str],
    metrics: Metrics,
    retry: RetryPolicy,
) -> ArraysByKey:
    """Every children source's array for each of ``keys`` (an empty one where none)."""
    arrays: ArraysByKey = {key: {} for key in keys}
    for source in spec.children:
        for start in range(0, len(keys), PARENTS_PER_SEARCH):
            parents = sorted(keys[start : start + PARENTS_PER_SEARCH])
            found = _search(es, spec, source, parents, metrics, retry)
            for key in parents:
                arrays[key][source.name] = found.get(key, ChildRows())
    return arrays


def _search(
    es: Elasticsearch,
    spec: EnrichSpec,
    source: PartSource,
    parents: list[str],
    metrics: Metrics,
    retry: RetryPolicy,
) -> dict[str, ChildRows]:
    """The arrays of ``parents`` in ``source``'s index, a page at a time."""
    assert source.array is not None  # a children source has one
    cap = source.array.max_children
    found: dict[str, ChildRows] = {}
    full: set[str] = set()  # parents whose array is capped: their other rows are counted
    size = FIRST_PAGE
    after: list[Any] | None = None
    while True:
        hits = _page(es, source, parents, size, after, metrics, retry)
        for hit in hits:
            parent = hit["sort"][0]
            array = found.setdefault(parent, ChildRows())
            if parent in full:
                continue
            row, record_ms = _row(hit)
            weight = len(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            if len(array.rows) >= cap or array.bytes + weight > spec.max_children_bytes:
                full.add(parent)
                continue
            array.take(row, weight, record_ms)
        metrics.add(names.ENRICHER_CHILDREN, len(hits))
        if len(hits) < size:
            break
        last = hits[-1]["sort"]
        # Past a capped parent's other rows in one step, rather than page through them.
        after = [last[0], PAST_EVERY_ORDER, _past(last[2])] if last[0] in full else last
        taken = sum(a.bytes for a in found.values())
        rows = sum(len(a.rows) for a in found.values())
        size = _next_size(spec.task_chunk_bytes, taken, rows)
    for parent in full:
        array = found[parent]
        rows, last = _count(es, source, parent, metrics, retry)
        array.left_out = rows - len(array.rows)
        # Of every row, left out or not: what the document says of its array is then what
        # fusion reconcile finds of it (fingerprints).
        array.record_ms = max(last or 0, array.record_ms or 0) or None
        metrics.add(names.ENRICHER_TRUNCATED)
    return found


def _page(
    es: Elasticsearch,
    source: PartSource,
    parents: list[str],
    size: int,
    after: list[Any] | None,
    metrics: Metrics,
    retry: RetryPolicy,
) -> list[dict[str, Any]]:
    assert source.array is not None
    search = partial(
        es.search,
        index=source.index,
        query={"bool": {"filter": [{"terms": {PARENT: parents}}]}},
        sort=[{PARENT: "asc"}, {ORDER: "asc"}, {source.sort_field: "asc"}],
        size=size,
        search_after=after,
        track_total_hits=False,
    )
    response = counted(search, f"search {source.index}", metrics, retry, source.index)
    hits: list[dict[str, Any]] = response["hits"]["hits"]
    return hits


def _count(
    es: Elasticsearch, source: PartSource, parent: str, metrics: Metrics, retry: RetryPolicy
) -> tuple[int, int | None]:
    """How many rows ``parent`` has, and its latest row's Kafka timestamp."""
    count = partial(
        es.search, index=source.index, size=0, track_total_hits=True,
        query={"term": {PARENT: parent}}, aggs={"last": {"max": {"field": TS}}},
    )  # fmt: skip
    found = counted(count, f"count {source.index}", metrics, retry, source.index)
    return int(found["hits"]["total"]["value"]), _ms(found["aggregations"]["last"]["value"])


def _past(value: Any) -> Any:
    """A sort value past ``value``'s kind: the row's own key is a keyword, unless the
    source's ``fields`` declare it a number."""
    return PAST_EVERY_ORDER if isinstance(value, str) else sys.maxsize


def _next_size(budget: int, taken: int, rows: int) -> int:
    """The next page's size: about ``budget`` bytes of rows as heavy as those so far."""
    if not rows:
        return MAX_PAGE
    per_row = max(1, taken // rows)
    return max(FIRST_PAGE // 10, min(MAX_PAGE, budget // per_row))


def _row(hit: Mapping[str, Any]) -> tuple[dict[str, Any], int | None]:
    """A child's row as its array holds it (without what Fusion kept in it), and its record's
    Kafka timestamp."""
    doc: dict[str, Any] = dict(hit["_source"])
    own = doc.pop(RESERVED_FIELD, None)
    if not isinstance(own, dict):
        return doc, None
    mine = {k: v for k, v in own.items() if k not in STORED_OWN}
    if mine:  # the row's own "fusion" field, beside what Fusion kept in it
        doc[RESERVED_FIELD] = mine
    at = own.get("ts")
    return doc, at if isinstance(at, int) and not isinstance(at, bool) else None


Fingerprint = dict[str, Any]  # {"rows": ..., "last_ms": ...}, as ChildRows.fingerprint()


def fingerprints(
    es: Elasticsearch,
    spec: EnrichSpec,
    keys: Sequence[str],
    metrics: Metrics,
    retry: RetryPolicy,
) -> dict[str, dict[str, Fingerprint]]:
    """What each key's arrays would say of themselves now (``fusion.children`` of its
    enriched document), from one aggregation per children source and 1,000 keys, no rows."""
    found: dict[str, dict[str, Fingerprint]] = {key: {} for key in keys}
    for source in spec.children:
        for start in range(0, len(keys), PARENTS_PER_SEARCH):
            parents = list(keys[start : start + PARENTS_PER_SEARCH])
            search = partial(
                es.search,
                index=source.index,
                size=0,
                query={"bool": {"filter": [{"terms": {PARENT: parents}}]}},
                aggs={"parents": {"terms": {"field": PARENT, "size": len(parents)},
                                  "aggs": {"last": {"max": {"field": TS}}}}},
            )  # fmt: skip
            response = counted(search, f"search {source.index}", metrics, retry, source.index)
            buckets = {
                bucket["key"]: bucket for bucket in response["aggregations"]["parents"]["buckets"]
            }
            for key in parents:
                bucket = buckets.get(key)
                last = bucket["last"]["value"] if bucket else None
                rows = bucket["doc_count"] if bucket else 0
                found[key][source.name] = {"rows": rows, "last_ms": _ms(last)}
    return found


def _ms(value: Any) -> int | None:
    return None if value is None else int(value)
