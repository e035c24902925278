"""One module per `fusion bench` run.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.bench.runs import burst as burst
    from fusion.bench.runs import burst_report as burst_report
    from fusion.bench.runs import fanout as fanout
    from fusion.bench.runs import fanout_report as fanout_report
    from fusion.bench.runs import formats as formats
    from fusion.bench.runs import idle as idle
    from fusion.bench.runs import memory as memory
    from fusion.bench.runs import reconcile as reconcile
    from fusion.bench.runs import scale as scale
    from fusion.bench.runs import status as status

__getattr__, __dir__, __all__ = attach(__name__, __file__)
