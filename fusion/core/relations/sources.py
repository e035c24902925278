"""A pipeline's sources checked together: their names, their children, their references."""

from __future__ import annotations

from collections.abc import Sequence

from fusion.core import SourceConfig
from fusion.core.relations.children import check_children
from fusion.core.relations.dimensions import references_of
from fusion.core.relations.parts import part_names
from fusion.core.relations.slots import slots_of


def check_sources(sources: Sequence[SourceConfig]) -> None:
    """ValueError naming the source and field at fault: a name given twice, a children source
    that cannot work, a reference that cannot be followed."""
    seen: set[str] = set()
    for source in sources:
        if source.name in seen:
            raise ValueError(f"duplicate source name {source.name!r}")
        seen.add(source.name)
    check_children(sources)
    slots_of(sources, references_of(sources))  # references followed: names, cycles, depth


def check_names(sources: Sequence[SourceConfig], key_field: str, reserved: str) -> None:
    """The enriched document nests each part under its name (a source's, a reference's), next
    to the key field and Fusion's own object (``reserved``): a part named like either would
    overwrite them."""
    for name in part_names(sources, slots_of(sources, references_of(sources))):
        if name in (key_field, reserved):
            raise ValueError(
                f"name {name!r} (a source's or a reference's) is taken: the enriched document "
                f"keeps the key in {key_field!r} and Fusion's fields in {reserved!r}; rename it"
            )
