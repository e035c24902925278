"""`fusion bench children`: orders with their lines, as a burst and as changes.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.bench.children import report as report
    from fusion.bench.children import run as run

__getattr__, __dir__, __all__ = attach(__name__, __file__)
