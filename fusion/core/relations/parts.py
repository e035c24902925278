"""A key's parts: what its enriched document holds, by name, and how long it waits for each.

A source keyed by the join key is a part under its own name, a children source
its array; a dimension is no part by itself: each reference to it is one,
under the reference's name, and waits (or not) as the dimension says
(``required``, ``timeout``), if its referrer is waited for.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusion.core import SourceConfig
from fusion.core.relations.dimensions import Reference


def part_names(sources: Sequence[SourceConfig], references: Sequence[Reference]) -> tuple[str, ...]:
    """Each source that is no dimension, then each reference."""
    own = tuple(s.name for s in sources if not s.dimension)
    return own + tuple(r.name for r in references)


def part_sources(
    sources: Sequence[SourceConfig], references: Sequence[Reference]
) -> dict[str, SourceConfig]:
    """Each part's name and the source whose settings it takes: its own, or its reference's
    dimension."""
    by_name = {s.name: s for s in sources}
    parts = {s.name: s for s in sources if not s.dimension}
    return parts | {r.name: by_name[r.dimension] for r in references}


def required_parts(
    sources: Sequence[SourceConfig], references: Sequence[Reference], default: bool
) -> tuple[str, ...]:
    """The parts a key waits for (children never: an order without lines is an order); a
    reference's when its dimension and its referrer are both required (a payment the key
    need not have cannot hold it back by the payer it would name)."""

    def required(s: SourceConfig) -> bool:
        return not s.children and (s.required if s.required is not None else default)

    by_name = {s.name: s for s in sources}
    referrers = {r.name: by_name[r.referrer] for r in references}
    return tuple(
        name
        for name, s in part_sources(sources, references).items()
        if required(s) and (name not in referrers or required(referrers[name]))
    )


def part_timeouts(
    sources: Sequence[SourceConfig], references: Sequence[Reference], default: float | None
) -> dict[str, float | None]:
    """Each part's completion timeout in seconds (None: wait as long as state lives)."""
    return {
        name: None if s.children else s.timeout if s.timeout is not None else default
        for name, s in part_sources(sources, references).items()
    }
