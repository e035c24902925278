"""A Docker engine of Fusion's own, and the images built offline.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.infra.containers import engine as engine

__getattr__, __dir__, __all__ = attach(__name__, __file__)
