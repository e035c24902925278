"""A key's slots: the rows it holds by reference, one reference or a chain of them.

An item names its brand (``item.references.brand``): the slot ``brand``. A
brand that names its company (``brand.references.company``) gives each item
a second slot, ``brand/company``: the company row of the brand the item
names, held inside the brand's row in the enriched document. A slot's name is
its references' names joined by ``/`` (a ``.`` in a name would be a path to
Elasticsearch, which nests it); its row is its last reference's dimension's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fusion.core import SourceConfig
from fusion.core.relations.dimensions import Reference

# The references a chain follows from a key's own source at the most (item → brand →
# company → country → region): every hop is a lookup per batch and a level of fan-out.
MAX_HOPS = 4
SLOT_SEPARATOR = "/"


@dataclass(frozen=True)
class Slot:
    """The row a key reaches through ``hops``, from one of its own sources."""

    hops: tuple[Reference, ...]

    @property
    def name(self) -> str:
        return SLOT_SEPARATOR.join(hop.name for hop in self.hops)

    @property
    def dimension(self) -> str:
        return self.hops[-1].dimension

    @property
    def parent(self) -> str | None:
        """The slot whose row names this one's (None: the key's own source names it)."""
        return SLOT_SEPARATOR.join(hop.name for hop in self.hops[:-1]) or None

    @property
    def referrer(self) -> str:
        """The key's own source the chain starts from."""
        return self.hops[0].referrer


def slots_of(sources: Sequence[SourceConfig], references: Sequence[Reference]) -> tuple[Slot, ...]:
    """Every slot, each chain after the slot it extends; ValueError naming a chain longer than
    :data:`MAX_HOPS` (cycles are refused before, :func:`references_of`)."""
    dimensions = {source.name for source in sources if source.dimension}
    out: list[Slot] = []

    def walk(hops: tuple[Reference, ...]) -> None:
        if len(hops) > MAX_HOPS:
            chain = " → ".join([hops[0].referrer, *(hop.dimension for hop in hops)])
            raise ValueError(
                f"{hops[-1].field}: a chain of {len(hops)} references ({chain}), more than the "
                f"{MAX_HOPS} Fusion follows; join the far end on a source of its own"
            )
        out.append(Slot(hops))
        for reference in references:
            if reference.referrer == hops[-1].dimension:
                walk((*hops, reference))

    for reference in references:
        if reference.referrer not in dimensions:
            walk((reference,))
    return tuple(out)
