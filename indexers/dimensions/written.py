"""Small fan-outs done by the task that wrote their row, one micro-batch sooner.

A dimension's indexer task, right after its ``refresh=wait_for`` write of the
changed rows, counts the keys naming each row (one ``terms`` aggregation for
all of them per reference to the dimension) and does the fan-outs that fit in
:data:`FIRST_PAGES` keys over all: their pages searched, their slot acks
published in its own transaction.
Up a chain it searches the first hop (the brands naming a changed company) and
puts the requests one hop nearer the keys on the fan-out topic. The others go on
the fan-out topic, untouched, and are paged there a batch later as before
(:mod:`indexers.dimensions.fanout`).

Why only the small ones: most of a small fan-out's time is the fixed cost of a
micro-batch, which this saves; a large one pages on the topic anyway, and a
page worked here holds the batch of the new keys beside it (docs/benchmark.md).

The count and the search both come after the rows' write, so whichever of an
item naming a row and the row's write came second still sees the other
(docs/dimensions.md): a row counted with no key naming it needs no search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acks import FanoutRequest
from fusion.core import STORED_REFS, now_utc
from fusion.elastic import Confirmed, call_with_retries
from fusion.observe import Metrics, names
from indexers import IndexSpec, SourceRecord
from indexers.dimensions.fanout import Where, request_records, requests_for, work_pages

# The keys a dimension's task tells at once, over all the rows it wrote: one search's worth.
FIRST_PAGES = 10_000
# The chain requests whose first hop a dimension's task searches: one search each.
FIRST_CHAIN_ROWS = 100


def first_pages(
    spec: IndexSpec, dimension: str, changed: Sequence[Confirmed[SourceRecord]], metrics: Metrics
) -> list[Any]:
    """The output records of the fan-outs of the rows ``changed``: the small ones done, a
    chain's first hop searched, the others asked of the fan-out topic."""
    requests = requests_for(dimension, spec.naming[dimension], changed, now_utc())
    fits, left = _fitting(spec, [(r, item.record) for r, item in requests], metrics)
    pages = work_pages(spec, fits, metrics)
    worked = len(requests) - len(left)  # a row no key names is done without a search
    metrics.add(names.FANOUT_ASKED, len(requests))
    metrics.add(names.FANOUT_REQUESTS, worked)  # asked and worked at once: none pending
    metrics.add(names.FANOUT_CONTINUED, len(pages.again) + len(pages.nearer))
    metrics.add(names.FANOUT_KEYS, len(pages.acks))
    metrics.add(names.FANOUT_DONE, worked - len(pages.again))
    return pages.records(spec.outputs) + request_records(spec.outputs.fanout, left)


def _fitting(
    spec: IndexSpec, requests: Sequence[tuple[FanoutRequest, SourceRecord]], metrics: Metrics
) -> tuple[list[tuple[FanoutRequest, Where, int]], list[FanoutRequest]]:
    """The requests worked here, each with its page size, and those left to the topic.

    A one-hop slot's request is worked when the keys naming its row fit what is left of
    :data:`FIRST_PAGES`. A chain's request is worked at its first hop, which finds the rows
    one hop nearer (brands naming the company): a search each, for
    :data:`FIRST_CHAIN_ROWS` of them; their requests go on the topic, a batch sooner.
    """
    ids = [record.key for _, record in requests]
    direct = {r.through for r, _ in requests if len(spec.slot(r.through).hops) == 1}
    naming = {name: naming_counts(spec, name, ids, metrics) for name in direct}
    fits: list[tuple[FanoutRequest, Where, int]] = []
    left: list[FanoutRequest] = []
    room = min(spec.fanout_page, FIRST_PAGES)
    chained = 0
    for request, record in requests:
        if request.through not in naming:
            chained += 1
            if chained <= FIRST_CHAIN_ROWS:
                fits.append((request, record.where, spec.fanout_page))
            else:
                left.append(request)
            continue
        keys = naming[request.through].get(request.id, 0)
        if 0 < keys <= room:
            # One more than counted: a page that comes back short is the whole fan-out.
            fits.append((request, record.where, keys + 1))
            room -= keys
        elif keys:
            left.append(request)
    return fits, left


def naming_counts(
    spec: IndexSpec, reference: str, ids: list[str], metrics: Metrics
) -> dict[str, int]:
    """How many keys' documents name each of the rows ``ids`` by the one-hop slot
    ``reference`` (a ``terms`` aggregation)."""
    index = spec.referrers[reference].index
    field = f"{STORED_REFS}.{spec.slot(reference).hops[-1].name}"
    es = spec.es()

    def call() -> dict[str, Any]:
        return dict(
            es.search(
                index=index, size=0, query={"terms": {field: ids}}, track_total_hits=False,
                aggs={"naming": {"terms": {"field": field, "size": len(ids)}}},
            )
        )  # fmt: skip

    found = call_with_retries(call, f"fan-out count of {index}", spec.retry(), metrics)
    buckets = found["aggregations"]["naming"]["buckets"]
    return {str(b["key"]): int(b["doc_count"]) for b in buckets}
