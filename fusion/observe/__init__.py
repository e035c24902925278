"""Metrics, their names, and the one reading of them (figures).

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.observe import names as names
    from fusion.observe import sketch as sketch
    from fusion.observe.figures import Figures as Figures
    from fusion.observe.metrics import Metrics as Metrics
    from fusion.observe.metrics import percentiles as percentiles
    from fusion.observe.names import DATA_LOSS_ALERT as DATA_LOSS_ALERT
    from fusion.observe.names import ES_ALERT as ES_ALERT
    from fusion.observe.names import ES_BACKPRESSURE_ALERT as ES_BACKPRESSURE_ALERT
    from fusion.observe.names import ES_REJECTED as ES_REJECTED
    from fusion.observe.names import KAFKA_ALERT as KAFKA_ALERT
    from fusion.observe.names import REPLAY_ALERT as REPLAY_ALERT

__getattr__, __dir__, __all__ = attach(__name__, __file__)
