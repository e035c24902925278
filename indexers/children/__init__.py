"""Children rows (docs/children.md): where each belongs and was, whom a write tells, how they sort.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from indexers.children.order import PAST_EVERY_ORDER as PAST_EVERY_ORDER
    from indexers.children.order import order_value as order_value
    from indexers.children.places import NOWHERE as NOWHERE
    from indexers.children.places import Place as Place
    from indexers.children.places import Stored as Stored
    from indexers.children.places import child_acks as child_acks
    from indexers.children.places import lookup as lookup
    from indexers.children.places import parents_told as parents_told
    from indexers.children.places import placed as placed
    from indexers.children.places import previous_place as previous_place
    from indexers.children.places import stored_of as stored_of

__getattr__, __dir__, __all__ = attach(__name__, __file__)
