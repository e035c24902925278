"""Dimension rows (docs/dimensions.md): what records name, the slot acks of what they reach
along chains, and the fan-out of a row's change to the keys that name it.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from indexers.dimensions.chains import follow as follow
    from indexers.dimensions.chains import slot_acks as slot_acks
    from indexers.dimensions.chains import walk as walk
    from indexers.dimensions.chains import written_slot_acks as written_slot_acks
    from indexers.dimensions.fanout import fan_out as fan_out
    from indexers.dimensions.fanout import worth_a_fanout as worth_a_fanout
    from indexers.dimensions.references import references_in as references_in
    from indexers.dimensions.references import stored_refs as stored_refs
    from indexers.dimensions.rows import Row as Row
    from indexers.dimensions.rows import RowId as RowId
    from indexers.dimensions.rows import lookup_rows as lookup_rows
    from indexers.dimensions.rows import record_content as record_content
    from indexers.dimensions.rows import row_of as row_of
    from indexers.dimensions.rows import slot_digest as slot_digest
    from indexers.dimensions.rows import wanted_rows as wanted_rows
    from indexers.dimensions.written import first_pages as first_pages

__getattr__, __dir__, __all__ = attach(__name__, __file__)
