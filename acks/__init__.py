"""The ack contract: what an indexer publishes for a document Elasticsearch made searchable.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from acks.contract import ACK_SPARK_SCHEMA as ACK_SPARK_SCHEMA
    from acks.contract import Ack as Ack
    from acks.errors import AckError as AckError
    from acks.fanout import FanoutRequest as FanoutRequest
    from acks.kafka import ack_records as ack_records

__getattr__, __dir__, __all__ = attach(__name__, __file__)
