"""Build the enriched document from the N source documents of one key (pure).

Shape, with ``_id`` = key in the enriched index::

    {"<key_field>": key,
     "<source>": {...that source's record...},        # one entry per source
     "<reference>": {..., "<reference>": {...}},      # a row it names, a chain's inside
     "fusion": {"fired_at": ..., "enriched_at": ..., "complete": true, "missing": [],
                "versions": {"<source>": <ES _version of that document>},
                "last_record_at": ...}}   # the latest part's Kafka timestamp

A partial document (``on_timeout = "partial"``) has ``"complete": false`` and
names the required sources it lacks in ``missing``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fusion.core import SLOT_SEPARATOR, dumps, iso_from_ms


@dataclass(frozen=True)
class FoundDoc:
    """A source document as Elasticsearch returned it.

    ``deleted``: the tombstone a deleted row left (its version still counts, so
    the enriched version keeps growing; its content is no part of the document).
    """

    source: dict[str, Any]
    version: int
    deleted: bool = False
    record_ms: int | None = None  # its record's Kafka timestamp (fusion.ts), if it kept one


@dataclass
class ChildRows:
    """A key's children of one source, in their order (docs/children.md); ``left_out``: rows
    past a cap (``max_children``, ``max_children_bytes``), which ``fusion.truncated`` counts."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    left_out: int = 0
    bytes: int = 0
    record_ms: int | None = None  # the latest row's Kafka timestamp

    def take(self, row: dict[str, Any], size: int, record_ms: int | None) -> None:
        self.rows.append(row)
        self.bytes += size
        if record_ms is not None:
            self.record_ms = max(record_ms, self.record_ms or record_ms)

    def fingerprint(self) -> dict[str, Any]:
        """What the enriched document says of the array, for ``fusion reconcile`` to tell a
        stale one: how many rows the key has, and its latest row's Kafka timestamp."""
        return {"rows": len(self.rows) + self.left_out, "last_ms": self.record_ms}


Arrays = Mapping[str, ChildRows]  # a key's children, by children source


def last_record_ms(found: Mapping[str, FoundDoc], arrays: Arrays | None = None) -> int | None:
    """The Kafka timestamp of the latest record among a key's parts (the rows they name, its
    children): where its latency starts."""
    stamps = [doc.record_ms for doc in found.values()]
    stamps += [rows.record_ms for rows in (arrays or {}).values()]
    return max((ms for ms in stamps if ms is not None), default=None)


def missing_sources(found: Mapping[str, FoundDoc], sources: Sequence[str]) -> list[str]:
    """Of ``sources``, those without a document (never written, or deleted)."""
    return [name for name in sources if name not in found or found[name].deleted]


def build_enriched(
    key_field: str,
    key: str,
    found: Mapping[str, FoundDoc],
    fired_at: str,
    enriched_at: str,
    missing: Sequence[str] = (),
    arrays: Arrays | None = None,
) -> dict[str, Any]:
    """The enriched document; the source documents are copied, never modified.

    ``missing``: required sources the document lacks (a partial document); ``arrays``: its
    children, by children source.
    """
    return _enriched(
        key_field, key, found, fired_at, enriched_at, missing, copy.deepcopy, arrays or {}
    )


def enriched_json(
    key_field: str,
    key: str,
    found: Mapping[str, FoundDoc],
    fired_at: str,
    enriched_at: str,
    missing: Sequence[str] = (),
    arrays: Arrays | None = None,
) -> bytes:
    """The enriched document as the JSON that Elasticsearch and the enriched topic get.

    The same document as :func:`build_enriched`, serialized once for both
    (compact UTF-8, as every Fusion event). The source documents are read in
    place: the dict that holds them never leaves this function, so nothing can
    modify them through it, and no copy is made (copying and serializing each
    document twice was a quarter of the enrichment's CPU).
    """
    return dumps(
        _enriched(key_field, key, found, fired_at, enriched_at, missing, _same, arrays or {})
    )


def _same(value: dict[str, Any]) -> dict[str, Any]:
    return value


def _enriched(
    key_field: str,
    key: str,
    found: Mapping[str, FoundDoc],
    fired_at: str,
    enriched_at: str,
    missing: Sequence[str],
    take: Callable[[dict[str, Any]], dict[str, Any]],
    arrays: Arrays,
) -> dict[str, Any]:
    doc: dict[str, Any] = {key_field: key}
    for name in sorted(found):  # a chain's row after the row that names it
        if not found[name].deleted:
            _place(doc, name.split(SLOT_SEPARATOR), take(found[name].source))
    for name in sorted(arrays):
        doc[name] = [take(row) for row in arrays[name].rows]
    doc["fusion"] = {
        "fired_at": fired_at,
        "enriched_at": enriched_at,
        "complete": not missing,
        "missing": sorted(missing),
        "versions": {name: found[name].version for name in sorted(found)},
    }
    if arrays:
        doc["fusion"]["children"] = {name: arrays[name].fingerprint() for name in sorted(arrays)}
    truncated = {name: rows.left_out for name, rows in sorted(arrays.items()) if rows.left_out}
    if truncated:
        doc["fusion"]["truncated"] = truncated
    if (last := last_record_ms(found, arrays)) is not None:
        doc["fusion"]["last_record_at"] = iso_from_ms(last)
    return doc


def _place(doc: dict[str, Any], path: list[str], value: dict[str, Any]) -> None:
    """``value`` at ``path`` in ``doc``: a chain's row (``brand/company``) inside the row that
    names it, copied first (the row is every key's that names it); nowhere when that row is
    not there."""
    holder = doc
    for part in path[:-1]:
        inner = holder.get(part)
        if not isinstance(inner, dict):
            return
        holder[part] = holder = dict(inner)
    holder[path[-1]] = value


def enriched_version(found: Mapping[str, FoundDoc], dimensions: Sequence[str] = ()) -> int:
    """The enriched document's external version: the sum of its sources' versions.

    Source versions only grow, so a newer combination of source documents
    always has a higher sum, and an enrichment from older documents (a replay)
    can never overwrite the document written from newer ones. A dimension
    row's version is left out: a key moving to a row written earlier would
    lower the sum; its slot's count of changes, which the caller adds, grows
    instead (docs/dimensions.md).
    """
    return sum(doc.version for name, doc in found.items() if name not in dimensions)


def next_version(
    found: Mapping[str, FoundDoc],
    dimensions: Sequence[str],
    changes: int,
    written: int | None = None,
) -> int:
    """The version to write a key's enriched document with.

    :func:`enriched_version` plus the slots' ``changes``; and, where the caller
    looked it up (a pipeline with dimensions), above ``written`` (the version
    the key's enriched document has now) in any case: the counter's count of changes starts from
    zero for a key it no longer remembers (its state TTL ran out,
    docs/dimensions.md), and the document must still get a higher version than
    the one it has, or Elasticsearch refuses it as stale. Batches write a key
    one after the other, so the document there is never newer than this one;
    a replayed batch rewrites the same content a version higher.
    """
    version = enriched_version(found, dimensions) + changes
    return version if written is None else max(version, written + 1)
