"""`fusion bench soak`: an hour under load, with kills and a restart.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.bench.soak import report as report
    from fusion.bench.soak import run as run

__getattr__, __dir__, __all__ = attach(__name__, __file__)
