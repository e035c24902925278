"""`fusion bench sustain`: the highest steady rate kept up with, beside this machine's floor.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.bench.sustain import report as report
    from fusion.bench.sustain import run as run
    from fusion.bench.sustain.options import SustainOptions as SustainOptions
    from fusion.bench.sustain.run import run_sustain as run_sustain
    from fusion.bench.sustain.step import steady_dataset as steady_dataset

__getattr__, __dir__, __all__ = attach(__name__, __file__)
