"""The dimension rows a record names, read from its document (pure).

A source with ``references = { brand = "brand_id" }`` names one brand row per
record: the id at that path, read by the join key's own rules (a string, or
an integer as its decimal text: ``17`` and ``"17"`` name one row). A record
whose reference is missing, null, an object or a list is no bad record: it is
indexed and acked, and its key waits for the row it does not name (a required
dimension) or goes without it (an optional one); the reason travels with the
key to its deadline event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fusion.core import Reference
from indexers import InvalidKey, checked_key


@dataclass(frozen=True)
class Named:
    """The row a record names by the reference ``name``: its id, or why it names none."""

    name: str
    id: str | None
    problem: str | None = None  # set when id is None: "item.brand_id is null"


def references_in(doc: Mapping[str, Any], references: Sequence[Reference]) -> tuple[Named, ...]:
    """For each of the source's references, the row ``doc`` names; never raises."""
    return tuple(_named(doc, reference) for reference in references)


def stored_refs(named: Sequence[Named]) -> dict[str, str]:
    """What the document keeps in ``fusion.refs``: the ids it names, by reference, so that a
    dimension's change finds its documents with one ``term`` query per id and reference."""
    return {n.name: n.id for n in named if n.id is not None}


def _named(doc: Mapping[str, Any], reference: Reference) -> Named:
    what = f"{reference.referrer}.{reference.text}"
    found: Any = doc
    for part in reference.path:
        if not isinstance(found, dict) or part not in found:
            return Named(reference.name, None, f"{what} is missing")
        found = found[part]
    try:
        return Named(reference.name, checked_key(found, what))
    except InvalidKey as exc:
        return Named(reference.name, None, str(exc))
