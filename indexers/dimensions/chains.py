"""Following a key's slots along chains of references (docs/dimensions.md).

An item names brand 17, which names company 3: the item's ``brand`` slot holds
brand 17's row, its ``brand/company`` slot company 3's, ordered by the item's
version, then brand 17's (``via``), then company 3's. Both writers of slot
acks follow chains the same way, after their own write:

- the indexer of an item, from the ids the items name, looks each level up in
  one ``_mget`` (:func:`follow`);
- a fan-out, from the changed row down, the same way; up from it, by searching
  each level's referrer for the row below (:mod:`indexers.dimensions.fanout`).

Pure but for the lookup function it is handed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from itertools import pairwise

from acks import Ack
from fusion.core import Reference, Slot, now_utc
from fusion.elastic import Confirmed
from fusion.observe import Metrics
from indexers import IndexSpec, SourceRecord
from indexers.dimensions.rows import Row, RowId, lookup_rows, slot, wanted_rows

Lookup = Callable[[list[RowId]], dict[RowId, Row]]


def onward(slots: Sequence[Slot]) -> dict[str, set[Reference]]:
    """Each dimension's references that the slots follow on from it."""
    out: dict[str, set[Reference]] = {}
    for each in slots:
        for hop, after in pairwise(each.hops):
            out.setdefault(hop.dimension, set()).add(after)
    return out


def follow(lookup: Lookup, slots: Sequence[Slot], rows: Mapping[RowId, Row]) -> dict[RowId, Row]:
    """``rows``, and every row they name along the slots' chains, a level per lookup."""
    further = onward(slots)
    found = dict(rows)
    frontier = dict(rows)
    while frontier:
        wanted = sorted(
            {
                (reference.dimension, ref)
                for (dimension, _), row in frontier.items()
                if row.there
                for reference in further.get(dimension, ())
                if (ref := row.refs.get(reference.name)) is not None
                and (reference.dimension, ref) not in found
            }
        )
        frontier = lookup(wanted) if wanted else {}
        found |= frontier
    return found


def walk(
    hops: Sequence[Reference], start: str | None, rows: Mapping[RowId, Row]
) -> tuple[tuple[int, ...], str | None, Row | None]:
    """Along ``hops`` from the id ``start`` (what the first hop names): the versions of the
    rows between (0 where none is there), and the id and row at the end (None: not named, or
    not there)."""
    via: list[int] = []
    ref = start
    for hop, after in pairwise(hops):
        row = rows.get((hop.dimension, ref)) if ref is not None else None
        via.append(row.version if row else 0)
        ref = row.refs.get(after.name) if row and row.there else None
    last = rows.get((hops[-1].dimension, ref)) if ref is not None else None
    return tuple(via), ref, last


def extending(slots: Sequence[Slot], prefix: Slot) -> list[Slot]:
    """The slots whose chain starts with ``prefix``'s (itself among them)."""
    return [s for s in slots if s.hops[: len(prefix.hops)] == prefix.hops]


def slot_acks(
    indexes: Mapping[str, str],
    slots: Sequence[Slot],
    confirmed: Iterable[Confirmed[SourceRecord]],
    rows: Mapping[RowId, Row],
    acked_at: datetime,
) -> list[Ack]:
    """One slot ack per confirmed document and slot starting at its source: the row its
    reference names, or the row at the end of the chain (``rows``: those looked up)."""
    acks = []
    for item in confirmed:
        record = item.record
        for slot_ in slots:
            start = None if record.deleted else record.refs.get(slot_.hops[0].name)
            via, ref, row = walk(slot_.hops, start, rows)
            named = (record.key, item.version, slot_.name, ref)
            index = indexes[slot_.dimension]
            acks.append(slot(index, named, row, record.where, acked_at, via))
    return acks


def written_slot_acks(
    spec: IndexSpec,
    slots: Sequence[Slot],
    confirmed: list[Confirmed[SourceRecord]],
    metrics: Metrics,
) -> list[Ack]:
    """Each confirmed document's slot acks, after a lookup of the rows they name and one per
    level of the chains beyond (indexers/dimensions/chains.py)."""

    def lookup(wanted: list[RowId]) -> dict[RowId, Row]:
        return lookup_rows(spec.es(), spec.indexes, wanted, spec.retry(), metrics)

    named = (item.record for item in confirmed if not item.record.deleted)
    rows = lookup(wanted_rows(named, {slot.hops[0] for slot in slots}))
    rows = follow(lookup, slots, rows)
    return slot_acks(spec.indexes, slots, confirmed, rows, now_utc())
