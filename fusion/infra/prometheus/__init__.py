"""`fusion infra up --prometheus`: Debian's Prometheus scraping the pipelines, with Fusion's alerts.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.infra.prometheus.server import JOB as JOB
    from fusion.infra.prometheus.server import LocalPrometheus as LocalPrometheus
    from fusion.infra.prometheus.server import Scraping as Scraping
    from fusion.infra.prometheus.server import add_target as add_target
    from fusion.infra.prometheus.server import recorded_prometheus as recorded_prometheus
    from fusion.infra.prometheus.server import start_prometheus as start_prometheus
    from fusion.infra.prometheus.server import url_of as url_of

__getattr__, __dir__, __all__ = attach(__name__, __file__)
