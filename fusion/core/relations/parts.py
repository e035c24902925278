"""A key's parts: what its enriched document holds, by name, and how long it waits for each.

A source keyed by the join key is a part under its own name, a children source
its array; a dimension is no part by itself: each slot reaching it is one
(:mod:`fusion.core.relations.slots`), under the slot's name, and waits (or not)
as the dimension says (``required``, ``timeout``), if what names it is waited
for.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusion.core import SourceConfig
from fusion.core.relations.slots import Slot


def part_names(sources: Sequence[SourceConfig], slots: Sequence[Slot]) -> tuple[str, ...]:
    """Each source that is no dimension, then each slot."""
    own = tuple(s.name for s in sources if not s.dimension)
    return own + tuple(slot.name for slot in slots)


def part_sources(sources: Sequence[SourceConfig], slots: Sequence[Slot]) -> dict[str, SourceConfig]:
    """Each part's name and the source whose settings it takes: its own, or its slot's
    dimension."""
    by_name = {s.name: s for s in sources}
    parts = {s.name: s for s in sources if not s.dimension}
    return parts | {slot.name: by_name[slot.dimension] for slot in slots}


def required_parts(
    sources: Sequence[SourceConfig], slots: Sequence[Slot], default: bool
) -> tuple[str, ...]:
    """The parts a key waits for (children never: an order without lines is an order); a
    slot's when its dimension is required and what names it is waited for (a payment the key
    need not have cannot hold it back by the payer it would name)."""

    def required(s: SourceConfig) -> bool:
        return not s.children and (s.required if s.required is not None else default)

    by_part = part_sources(sources, slots)
    named_by = {slot.name: slot.parent or slot.referrer for slot in slots}
    waited: list[str] = []
    for name, source in by_part.items():  # a slot after what names it
        if required(source) and (name not in named_by or named_by[name] in waited):
            waited.append(name)
    return tuple(waited)


def part_timeouts(
    sources: Sequence[SourceConfig], slots: Sequence[Slot], default: float | None
) -> dict[str, float | None]:
    """Each part's completion timeout in seconds (None: wait as long as state lives)."""
    return {
        name: None if s.children else s.timeout if s.timeout is not None else default
        for name, s in part_sources(sources, slots).items()
    }
