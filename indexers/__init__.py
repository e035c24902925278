"""The indexer stage: source records parsed, written to their indexes, acked.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from indexers.avro_fields import with_registered_fields as with_registered_fields
    from indexers.children import PAST_EVERY_ORDER as PAST_EVERY_ORDER
    from indexers.children import order_value as order_value
    from indexers.dimensions import record_content as record_content
    from indexers.dimensions import row_of as row_of
    from indexers.dimensions import slot_digest as slot_digest
    from indexers.handoff import HANDOFF_SCHEMA as HANDOFF_SCHEMA
    from indexers.handoff import handoff_batch as handoff_batch
    from indexers.keys import InvalidKey as InvalidKey
    from indexers.keys import checked_key as checked_key
    from indexers.query import start_indexer as start_indexer
    from indexers.records import RawRecord as RawRecord
    from indexers.records import SourceRecord as SourceRecord
    from indexers.records import content_digest as content_digest
    from indexers.records import is_tombstone as is_tombstone
    from indexers.records import parse as parse
    from indexers.spec import IndexSpec as IndexSpec
    from indexers.spec import Outputs as Outputs
    from indexers.spec import Referrer as Referrer
    from indexers.spec import index_spec as index_spec
    from indexers.task import IndexPartition as IndexPartition
    from indexers.task import document_acks as document_acks

__getattr__, __dir__, __all__ = attach(__name__, __file__)
