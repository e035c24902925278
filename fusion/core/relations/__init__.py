"""How a pipeline's sources relate: dimensions named by references, children naming a parent.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.core.relations.dimensions import Reference as Reference
    from fusion.core.relations.dimensions import references_of as references_of
    from fusion.core.relations.parts import part_names as part_names
    from fusion.core.relations.parts import part_sources as part_sources
    from fusion.core.relations.parts import part_timeouts as part_timeouts
    from fusion.core.relations.parts import required_parts as required_parts
    from fusion.core.relations.slots import MAX_HOPS as MAX_HOPS
    from fusion.core.relations.slots import SLOT_SEPARATOR as SLOT_SEPARATOR
    from fusion.core.relations.slots import Slot as Slot
    from fusion.core.relations.slots import slots_of as slots_of
    from fusion.core.relations.sources import check_names as check_names
    from fusion.core.relations.sources import check_sources as check_sources

__getattr__, __dir__, __all__ = attach(__name__, __file__)
