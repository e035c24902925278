"""The command line (`fusion`).

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.cli import main as main

__getattr__, __dir__, __all__ = attach(__name__, __file__)
