"""One slice of a `fusion reconcile` run, on an executor: scan, decide, enrich.

The slice walks its part of the first required source's index a page at a
time (ids only), reads every source's and the enriched document's version of
each key on the page in one ``_mget``, and enriches the keys that need it
through the enricher's own code path (:mod:`fusion.ops.reconcile` plans the
slices and publishes what they return).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from elasticsearch import Elasticsearch

from fusion.core import RESERVED_FIELD, ReadyEvent, crash_point
from fusion.elastic import RetryPolicy, call_with_retries, scan
from fusion.enricher import EnrichSpec, enrich_events, fingerprints, mget
from fusion.observe import Metrics, names
from fusion.spark import Job, TaskOutput, column

if TYPE_CHECKING:
    import pyarrow as pa

STAGE = "reconcile"
# What the slices count, besides the enricher's own counts.
SCANNED, COMPLETE, UP_TO_DATE, PLANNED = (
    f"reconcile.{n}" for n in ("scanned", "complete", "up_to_date", "planned")
)


def needs_enrichment(
    required: Sequence[str],
    versions: Mapping[str, int],
    enriched_version: int | None,
    deleted: Set[str] = frozenset(),
) -> bool:
    """Every required source is there and the enriched document is missing or older.

    ``deleted``: sources whose document is a deleted row's tombstone; absent, but
    their versions count in the enriched version all the same.
    """
    if any(name not in versions or name in deleted for name in required):
        return False
    return enriched_version is None or enriched_version < sum(versions.values())


def slice_task(n: int) -> str:
    """The task key of slice ``n``: its transactional id, and where its marker is."""
    return f"slice-{n}"


@dataclass(frozen=True)
class ScanAndEnrich:
    """Task function: scan one slice, enrich what needs it, a page at a time."""

    spec: EnrichSpec

    def __call__(self, job: Job, rows: pa.Table) -> Iterator[TaskOutput]:
        spec = self.spec
        es, retry = spec.es(), spec.retry()
        for n, slices, started_at in zip(
            *(column(rows, name) for name in ("slice", "slices", "started_at")), strict=True
        ):
            task = slice_task(n)
            retries = Metrics()
            for ids in pages(es, spec, (n, slices), retry):
                keys, counts = _to_enrich(es, spec, ids, (retry, retries), started_at)
                events = [
                    (_ready(spec, key, started_at), (STAGE, n, i)) for i, key in enumerate(keys)
                ]
                yield TaskOutput(task, (), counts)
                for part in enrich_events(spec, es, events, retry):
                    yield TaskOutput(task, part.records, part.counts)
            yield TaskOutput(task, (), {names.ES_RETRIES: retries.get(names.ES_RETRIES)})


def _to_enrich(
    es: Elasticsearch,
    spec: EnrichSpec,
    ids: list[str],
    retrying: tuple[RetryPolicy, Metrics],
    run_started_at: str,
) -> tuple[list[str], dict[str, int]]:
    """The keys of a page that need enriching, and what the page counted.

    An enriched document this run wrote (its ``fired_at`` is the run's start)
    counts as missing: a crash may have stopped its slice before the slice's
    records were published, and a resumed run redoes such a slice whole.
    """
    # Every source keyed by the key, then the enriched document ("" names it) of each key.
    targets = [(s.index, s.name) for s in spec.parts]
    targets.append((spec.enriched_index, ""))
    # The enriched document's fire and what it says of its arrays; a source's tombstone mark.
    own = ("fired_at", "children", "versions")
    fields = {"": [f"{RESERVED_FIELD}.{name}" for name in own]}
    docs = [
        {"_index": index, "_id": key, "_source": fields.get(name, [f"{RESERVED_FIELD}.deleted"])}
        for key in ids
        for index, name in targets
    ]
    crash_point("reconcile.scan")
    hits = call_with_retries(partial(mget, es, docs), "reconcile _mget", *retrying)
    keys: list[str] = []
    counts = dict.fromkeys((SCANNED, COMPLETE, UP_TO_DATE, PLANNED), 0)
    current: dict[str, Any] = {}  # complete keys' enriched documents, by key
    for i, key in enumerate(ids):
        row = hits[i * len(targets) : (i + 1) * len(targets)]
        versions = {
            name: hit["_version"]
            for (_, name), hit in zip(targets, row, strict=True)
            if hit.get("found")
        }
        enriched = versions.pop("", None)
        if enriched is not None and spec.versioned:
            # Its version counts changes only the counter knows: the parts' it was built from.
            enriched = sum(_meta(row[-1]).get("versions", {}).values())
        if _fired_at(row[-1]) == run_started_at:
            enriched = None  # written by this run, maybe never published
        gone = {name for (_, name), hit in zip(targets, row, strict=True) if _tombstone(hit)}
        complete = all(n in versions and n not in gone for n in spec.required)
        counts[SCANNED] += 1
        counts[COMPLETE] += complete
        if needs_enrichment(spec.required, versions, enriched, gone):
            keys.append(key)
            counts[PLANNED] += 1
        elif complete:
            current[key] = row[-1].get("_source", {})
    stale = stale_arrays(es, spec, current, retrying) if spec.children else set()
    keys += [key for key in current if key in stale]
    counts[PLANNED] += len(stale)
    counts[UP_TO_DATE] += len(current) - len(stale)
    return keys, counts


def stale_arrays(
    es: Elasticsearch,
    spec: EnrichSpec,
    enriched: Mapping[str, Any],
    retrying: tuple[RetryPolicy, Metrics],
) -> set[str]:
    """The keys whose enriched document's arrays are not what their children are now (a
    child's ack lost): by the rows each has and its latest row's time (docs/children.md)."""
    retry, retries = retrying
    now = fingerprints(es, spec, list(enriched), retries, retry)
    return {
        key
        for key, doc in enriched.items()
        if dict(doc.get(RESERVED_FIELD, {})).get("children") != now[key]
    }


def _tombstone(hit: Mapping[str, Any]) -> bool:
    own = hit.get("_source", {}).get(RESERVED_FIELD)
    return isinstance(own, dict) and own.get("deleted") is True


def _meta(hit: Mapping[str, Any]) -> Mapping[str, Any]:
    """An enriched document's own object (``fusion``), as far as the ``_mget`` read it."""
    own = hit.get("_source", {}).get(RESERVED_FIELD)
    return own if isinstance(own, dict) else {}


def _fired_at(hit: Mapping[str, Any]) -> str | None:
    fired_at = _meta(hit).get("fired_at")
    return str(fired_at) if fired_at is not None else None


def pages(
    es: Elasticsearch, spec: EnrichSpec, part: tuple[int, int], retry: RetryPolicy
) -> Iterator[list[str]]:
    """The ids of one slice of the first required source's index, a page at a time, in key order.

    ``part``: (slice, slices), Elasticsearch's sliced search.
    """
    first = spec.source(spec.required[0])
    for hits in scan.pages(es, first.index, first.sort_field, part, retry):
        yield [hit["_id"] for hit in hits]


def _ready(spec: EnrichSpec, key: str, at: str) -> bytes:
    sources = list(spec.source_names)
    return ReadyEvent(key=key, sources=sources, first_ack_at=at, fired_at=at).to_bytes()
