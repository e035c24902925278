"""The counter's state rebuilt from Elasticsearch and Kafka (``fusion run --rebuild-state``).

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.counter.rebuild.plan import initial_state as initial_state

__getattr__, __dir__, __all__ = attach(__name__, __file__)
