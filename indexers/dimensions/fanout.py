"""The fan-out's executor task: a page of keys per changed dimension row (docs/dimensions.md).

A dimension's indexer task asks for a fan-out of each row it wrote
(:func:`requests_for`), and does the small ones itself (:mod:`indexers.dimensions.written`);
the others go on the fan-out topic. A task of the fan-out topic's partition
then, for each row asked for (the newest request of a row in the batch wins):

1. searches the referrer's index for the documents that name the row by the
   request's reference (a ``term`` query on ``fusion.refs.<reference>``, sorted
   by key, after the request's cursor), ``fanout_page`` of them;
2. gives each key a slot ack: the item's version, the row's id, version and
   digest (a deleted row: the slot is empty);
3. if the page was full, asks again with the page's last sort value.

The slot acks, the request that continues and the dead letters go out in the
task's one Kafka transaction, with its batch marker: a crash resumes at the
last committed page, and a page done twice changes nothing (its acks are not
newer than what the counter has).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from elasticsearch import Elasticsearch

from acks import Ack, AckError, FanoutRequest, ack_records
from fusion.core import (
    SLOT_SEPARATOR as SEPARATOR,
)
from fusion.core import (
    STORED_REFS,
    DeadLetter,
    Slot,
    crash_point,
    dead_letter_records,
    now_utc,
)
from fusion.elastic import Confirmed, RetryPolicy, call_with_retries
from fusion.observe import Metrics, names
from indexers import IndexSpec, Outputs, RawRecord, Referrer, SourceRecord
from indexers.dimensions.chains import extending, follow, walk
from indexers.dimensions.rows import Row, RowId, lookup_rows, slot


def requests_for(
    dimension: str,
    references: Sequence[str],
    confirmed: Iterable[Confirmed[SourceRecord]],
    at: datetime,
) -> list[tuple[FanoutRequest, Confirmed[SourceRecord]]]:
    """One fan-out request per dimension row written (a deleted one's too) and reference
    naming the dimension, each with its row."""
    return [
        (
            FanoutRequest(
                dimension=dimension,
                id=item.record.key,
                version=item.version,
                digest=None if item.record.deleted else item.record.digest,
                requested_at=at,
                reference=reference,
                refs=dict(item.record.refs),
            ),
            item,
        )
        for item in confirmed
        for reference in references
    ]


Where = tuple[str, int, int]  # the request's topic, partition, offset


def worth_a_fanout(item: Confirmed[SourceRecord], before: Row | None, first_offset: int) -> bool:
    """Whether a dimension row's write changed what the keys naming it hold.

    Not when the row was there with the same content (a record sent again), or
    was already deleted and is deleted again, as an earlier batch left it. A row
    found at a version of this batch's own offsets (``first_offset`` on: the
    version is the offset + 1) was written by an attempt of this batch that did
    not commit, so its request may not have gone out: it goes (the counter drops
    what it had already). A lost checkpoint's replay spans more offsets than the
    attempt did, so that row can be older than this write with its content.
    """
    if before is None or before.version > first_offset:
        return True
    if item.record.deleted:
        return before.digest is not None
    return before.digest != item.record.digest


def newest_per_row(
    requests: Iterable[tuple[FanoutRequest, Where]],
) -> list[tuple[FanoutRequest, Where]]:
    """A row's newest request through each reference (a newer row version starts over, which
    covers every key); for one version, the one that got furthest."""
    newest: dict[tuple[str, str, str, int | None, str | None], tuple[FanoutRequest, Where]] = {}
    for request, where in requests:
        row = (request.dimension, request.id, request.through, request.hop, request.row)
        before = newest.get(row)
        if before is None or (request.version, request.keys) > (before[0].version, before[0].keys):
            newest[row] = (request, where)
    return list(newest.values())


def fan_out(spec: IndexSpec, raws: list[RawRecord]) -> tuple[list[Any], dict[str, int]]:
    """A fan-out partition's output records (slot acks on the slots topic) and counts."""
    requests: list[tuple[FanoutRequest, Where]] = []
    dead: list[DeadLetter] = []
    for raw in raws:
        try:
            requests.append((FanoutRequest.from_bytes(raw.value), raw.where))
        except AckError as exc:
            dead.append(DeadLetter.of(str(exc), "indexer", None, raw.where, raw.value, None))
    metrics = Metrics()
    newest = newest_per_row(requests)
    page = spec.fanout_page
    pages = work_pages(spec, [(r, where, page) for r, where in newest], metrics)
    crash_point("fanout.after_page")  # pages searched, their acks and what continues not out
    out = dead_letter_records(spec.outputs.dlq, dead, spec.outputs.message_limit)
    out += pages.records(spec.outputs)
    counts = {
        names.FANOUT_REQUESTS: len(raws),
        names.FANOUT_CONTINUED: len(pages.again) + len(pages.nearer),
        names.FANOUT_KEYS: len(pages.acks),
        names.FANOUT_DONE: len(newest) - len(pages.again),
        names.FANOUT_DLQ: len(dead),
        names.ES_RETRIES: metrics.get(names.ES_RETRIES),
    }
    return out, counts


@dataclass(frozen=True)
class Pages:
    """What pages of fan-out requests made: their slot acks, the requests that continue after
    their page's last hit, and a chain's requests one hop nearer the keys."""

    acks: list[Ack]
    again: list[FanoutRequest]
    nearer: list[FanoutRequest] = field(default_factory=list)

    def records(self, outputs: Outputs) -> list[Any]:
        """The requests that continue, on the fan-out topic, then the slot acks."""
        requests = request_records(outputs.fanout, [*self.again, *self.nearer])
        return requests + ack_records(outputs.slots, self.acks)


def request_records(topic: str, requests: Iterable[FanoutRequest]) -> list[Any]:
    """Fan-out requests as records of the fan-out ``topic``."""
    return [(topic, r.kafka_key, r.to_bytes()) for r in requests]


def work_pages(
    spec: IndexSpec, requests: Sequence[tuple[FanoutRequest, Where, int]], metrics: Metrics
) -> Pages:
    """A page of each request, of the size given with it.

    A request's page is the documents naming its row at its hop: keys (the first hop), each
    given its slot acks; or, up a chain, rows of the dimension before, each a request of its
    own one hop nearer the keys (items naming brand 17, after brand 17 was found naming
    company 3).
    """
    pages = Pages([], [])
    es, retry = spec.es(), spec.retry()
    for request, where, size in requests:
        prefix = spec.slot(request.through)
        hop = len(prefix.hops) - 1 if request.hop is None else request.hop
        searched = Searched(
            spec.referrers[SEPARATOR.join(h.name for h in prefix.hops[: hop + 1])],
            f"{STORED_REFS}.{prefix.hops[hop].name}",
            request.row or request.id,
        )
        hits, after = search_page(es, searched, request.after, retry, metrics, size)
        if hop == 0:
            pages.acks.extend(_slots(spec, prefix, request, hits, where, metrics))
        else:
            pages.nearer.extend(_nearer(request, hop - 1, hits))
        if after is not None:
            continued = {"after": after, "keys": request.keys + len(hits)}
            pages.again.append(request.model_copy(update=continued))
    return pages


@dataclass(frozen=True)
class Searched:
    """Where a page's hits are: the referrer's index, the field naming the row, its id."""

    referrer: Referrer
    field: str
    id: str


SEARCH_SIZE = 10_000  # hits one search returns at the most (index.max_result_window)


def search_page(
    es: Elasticsearch,
    searched: Searched,
    after: list[Any] | None,
    retry: RetryPolicy,
    metrics: Metrics,
    page_size: int,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """One page of the documents naming the row (``page_size`` hits, in searches of up to
    :data:`SEARCH_SIZE`), and the cursor of the next page (None: this was the last)."""
    index = searched.referrer.index
    sort = [{searched.referrer.sort_field: "asc"}]
    query = {"term": {searched.field: searched.id}}
    hits = list[dict[str, Any]]()
    while len(hits) < page_size:
        size = min(SEARCH_SIZE, page_size - len(hits))

        def call(after: list[Any] | None = after, size: int = size) -> dict[str, Any]:
            return dict(
                es.search(
                    index=index, query=query, sort=sort, search_after=after, size=size,
                    version=True, source=False, track_total_hits=False,
                )
            )  # fmt: skip

        found = call_with_retries(call, f"fan-out search of {index}", retry, metrics)
        page: Sequence[dict[str, Any]] = found["hits"]["hits"]
        hits += page
        if len(page) < size:
            return hits, None  # the last documents naming it
        after = page[-1]["sort"]
    return hits, after


def _nearer(
    request: FanoutRequest, hop: int, hits: Sequence[dict[str, Any]]
) -> list[FanoutRequest]:
    """Each hit (a row naming the row searched for), as the request one hop nearer the keys:
    the documents naming that row are searched next, its version among the rows between."""
    return [
        request.model_copy(
            update={
                "hop": hop, "row": hit["_id"], "between": [hit["_version"], *request.between],
                "after": None, "keys": 0,
            }
        )
        for hit in hits
    ]  # fmt: skip


def _slots(
    spec: IndexSpec,
    prefix: Slot,
    request: FanoutRequest,
    hits: Sequence[dict[str, Any]],
    where: Where,
    metrics: Metrics,
) -> list[Ack]:
    """Each hit's slot acks: its key, at the version found, reaches the requested row through
    ``prefix``'s chain, and through every slot that extends it the rows the row names on."""
    at = now_utc()
    changed = Row(request.version, request.digest, refs=request.refs)
    rows = {(request.dimension, request.id): changed}
    slots = extending(spec.slots, prefix)
    if len(slots) > 1 and hits:

        def lookup(wanted: list[RowId]) -> dict[RowId, Row]:
            return lookup_rows(spec.es(), spec.indexes, wanted, spec.retry(), metrics)

        rows = follow(lookup, slots, rows)
    at_hop = len(prefix.hops) - 1
    acks = []
    for slot_ in slots:
        tail, ref, row = walk(slot_.hops[at_hop:], request.id, rows)
        via = (*request.between, *tail)
        index = spec.indexes[slot_.dimension]
        for hit in hits:
            named = (hit["_id"], hit["_version"], slot_.name, ref)
            acks.append(slot(index, named, row, where, at, via))
    return acks
