"""Small fan-outs done in the micro-batch that wrote their row.

A fan-out of a changed dimension row is asked of the fan-out topic and paged
there a batch later (:mod:`indexers.fanout`), unless it is small: a row that
at most :data:`FIRST_PAGES` keys name (and no more than ``fanout_page``) has
its one page searched at once, by :func:`small_first`, which counts the keys
naming each row first (one ``terms`` aggregation for all of them). Who runs
it:

- in a single query (``layout = "single"``), the resolve stage
  (:mod:`indexers.resolve`), after every indexer task of the batch has
  written: the count and the search see the same documents in a replay as in
  the first attempt, so the slot acks go on to the counter in the same batch;
- in the stages layout, the row's own indexer task, right after its
  ``refresh=wait_for`` write (:func:`first_pages`); its slot acks are
  published and counted a batch later.

Why only the small ones: most of a small fan-out's time is the fixed cost of a
micro-batch, which this saves; a large one pages on the topic anyway, and a
page worked here holds the batch of the new keys beside it (docs/benchmark.md).
Each row is decided on its own count, never on what other rows of the batch
took: the decision must not change when a replay finds more rows to fan out.

The count and the search both come after the rows' write, so whichever of an
item naming a row and the row's write came second still sees the other
(docs/dimensions.md): a row counted with no key naming it needs no search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acks.fanout import FanoutRequest
from fusion.core.config import STORED_REFS
from fusion.core.events import now_utc
from fusion.elastic.bulk import Confirmed
from fusion.elastic.retry import RetryPolicy, call_with_retries
from fusion.observe import names
from fusion.observe.metrics import Metrics
from fusion.spark.tasks import Job
from indexers.fanout import Pages, Where, request_records, requests_for, work_pages
from indexers.records import SourceRecord

# The most keys naming one row that its fan-out is done at once: one search's worth.
FIRST_PAGES = 10_000


def first_pages(
    job: Job, dimension: str, changed: Sequence[Confirmed[SourceRecord]], metrics: Metrics
) -> list[Any]:
    """The output records of the fan-outs of the rows ``changed``: the small ones done, the
    others asked of the fan-out topic."""
    requests = requests_for(dimension, changed, now_utc())
    wheres = [item.record.where for item in changed]
    pages, left = small_first(job, list(zip(requests, wheres, strict=True)), metrics)
    return pages.records(job.config) + request_records(job.config, left)


def small_first(
    job: Job, requests: Sequence[tuple[FanoutRequest, Where]], metrics: Metrics
) -> tuple[Pages, list[FanoutRequest]]:
    """The fan-outs of ``requests`` (rows of one or more dimensions) that fit, done: their
    pages; and the others, for the fan-out topic."""
    fits: list[tuple[FanoutRequest, Where, int]] = []
    left: list[FanoutRequest] = []
    room = min(job.config.pipeline.fanout_page, FIRST_PAGES)
    for dimension in sorted({request.dimension for request, _ in requests}):
        of = [(r, where) for r, where in requests if r.dimension == dimension]
        naming = naming_counts(job, dimension, sorted({r.id for r, _ in of}), metrics)
        for request, where in of:
            keys = naming.get(request.id, 0)
            if 0 < keys <= room:
                # One more than counted: a page that comes back short is the whole fan-out.
                fits.append((request, where, keys + 1))
            elif keys:
                left.append(request)
    pages = work_pages(job, fits, metrics)
    worked = len(requests) - len(left)  # a row no key names is done without a search
    metrics.add(names.FANOUT_ASKED, len(requests))
    metrics.add(names.FANOUT_REQUESTS, worked)  # asked and worked at once: none pending
    metrics.add(names.FANOUT_CONTINUED, len(pages.again))
    metrics.add(names.FANOUT_KEYS, len(pages.acks))
    metrics.add(names.FANOUT_DONE, worked - len(pages.again))
    return pages, left


def naming_counts(job: Job, dimension: str, ids: list[str], metrics: Metrics) -> dict[str, int]:
    """How many keys' documents name each of the rows ``ids`` (a ``terms`` aggregation)."""
    config = job.config
    index = config.index_of(config.source(config.referrer_of(dimension)))
    field = f"{STORED_REFS}.{dimension}"
    es = job.elasticsearch()

    def call() -> dict[str, Any]:
        return dict(
            es.search(
                index=index, size=0, query={"terms": {field: ids}}, track_total_hits=False,
                aggs={"naming": {"terms": {"field": field, "size": len(ids)}}},
            )
        )  # fmt: skip

    retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
    found = call_with_retries(call, f"fan-out count of {index}", retry, metrics)
    buckets = found["aggregations"]["naming"]["buckets"]
    return {str(b["key"]): int(b["doc_count"]) for b in buckets}
