"""The enricher stage: a fired key's parts fetched, joined and written.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.enricher import lookups as lookups
    from fusion.enricher.children import fetch_arrays as fetch_arrays
    from fusion.enricher.children import fingerprints as fingerprints
    from fusion.enricher.document import ChildRows as ChildRows
    from fusion.enricher.document import FoundDoc as FoundDoc
    from fusion.enricher.document import build_enriched as build_enriched
    from fusion.enricher.document import enriched_json as enriched_json
    from fusion.enricher.document import enriched_version as enriched_version
    from fusion.enricher.lookups import mget as mget
    from fusion.enricher.query import start_enricher as start_enricher
    from fusion.enricher.request import EnrichRequest as EnrichRequest
    from fusion.enricher.request import EventPosition as EventPosition
    from fusion.enricher.request import decided_event as decided_event
    from fusion.enricher.spec import EnrichSpec as EnrichSpec
    from fusion.enricher.spec import enrich_spec as enrich_spec
    from fusion.enricher.task import EnrichedDoc as EnrichedDoc
    from fusion.enricher.task import enrich as enrich
    from fusion.enricher.task import enrich_events as enrich_events
    from fusion.enricher.task import enriched_records as enriched_records

__getattr__, __dir__, __all__ = attach(__name__, __file__)
