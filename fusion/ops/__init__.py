"""Operating a pipeline: status, explain, reconcile, health, Prometheus.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.ops import explain as explain
    from fusion.ops import reconcile as reconcile
    from fusion.ops import status as status
    from fusion.ops import teardown as teardown
    from fusion.ops.health import HealthWatch as HealthWatch
    from fusion.ops.prometheus import ALERT_RULES as ALERT_RULES
    from fusion.ops.prometheus import MetricsServer as MetricsServer
    from fusion.ops.prometheus import PipelineCollector as PipelineCollector

__getattr__, __dir__, __all__ = attach(__name__, __file__)
