"""Small fan-outs done by the task that wrote their row, one micro-batch sooner.

A dimension's indexer task, right after its ``refresh=wait_for`` write of the
changed rows, counts the keys naming each row (one ``terms`` aggregation for
all of them per reference to the dimension) and does the fan-outs that fit in
:data:`FIRST_PAGES` keys over all: their pages searched, their slot acks
published in its own transaction.
The others go on the fan-out topic, untouched, and are paged there a batch
later as before (:mod:`indexers.dimensions.fanout`).

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


def first_pages(
    spec: IndexSpec, dimension: str, changed: Sequence[Confirmed[SourceRecord]], metrics: Metrics
) -> list[Any]:
    """The output records of the fan-outs of the rows ``changed``: the small ones done, the
    others asked of the fan-out topic."""
    slots = spec.naming[dimension]
    requests = requests_for(dimension, slots, changed, now_utc())
    ids = [item.record.key for item in changed]
    # A chain's keys are found a hop at a time, on the fan-out topic.
    direct = [name for name in slots if len(spec.slot(name).hops) == 1]
    naming = {name: naming_counts(spec, name, ids, metrics) for name in direct if changed}
    fits: list[tuple[FanoutRequest, Where, int]] = []
    left: list[FanoutRequest] = []
    room = min(spec.fanout_page, FIRST_PAGES)
    for request, item in requests:
        if request.through not in naming:
            left.append(request)
            continue
        keys = naming[request.through].get(request.id, 0)
        if 0 < keys <= room:
            # One more than counted: a page that comes back short is the whole fan-out.
            fits.append((request, item.record.where, keys + 1))
            room -= keys
        elif keys:
            left.append(request)
    pages = work_pages(spec, fits, metrics)
    worked = len(requests) - len(left)  # a row no key names is done without a search
    metrics.add(names.FANOUT_ASKED, len(requests))
    metrics.add(names.FANOUT_REQUESTS, worked)  # asked and worked at once: none pending
    metrics.add(names.FANOUT_CONTINUED, len(pages.again))
    metrics.add(names.FANOUT_KEYS, len(pages.acks))
    metrics.add(names.FANOUT_DONE, worked - len(pages.again))
    return pages.records(spec.outputs) + request_records(spec.outputs.fanout, left)


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
