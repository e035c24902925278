"""Change-data-capture servers of the local runtime: PostgreSQL, Kafka Connect, Debezium.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.infra.cdc.connect import postgres_connector as postgres_connector
    from fusion.infra.cdc.connect import register as register
    from fusion.infra.cdc.connect import unregister as unregister
    from fusion.infra.cdc.postgres import PG_DATABASE as PG_DATABASE
    from fusion.infra.cdc.postgres import PG_ROLE as PG_ROLE
    from fusion.infra.cdc.postgres import LocalPostgres as LocalPostgres
    from fusion.infra.cdc.servers import CdcService as CdcService
    from fusion.infra.cdc.servers import cdc_services as cdc_services
    from fusion.infra.cdc.servers import cdc_status as cdc_status
    from fusion.infra.cdc.servers import cdc_urls as cdc_urls
    from fusion.infra.cdc.servers import recorded_ports as recorded_ports
    from fusion.infra.cdc.servers import start_cdc as start_cdc
    from fusion.infra.cdc.servers import wait_cdc as wait_cdc

__getattr__, __dir__, __all__ = attach(__name__, __file__)
