"""Create the pipeline's indexes if they are missing, with mappings from the source hints."""

from __future__ import annotations

from typing import Any

from elasticsearch import BadRequestError, Elasticsearch

from fusion.core import (
    RESERVED_FIELD,
    SLOT_SEPARATOR,
    STORED_KEY,
    PipelineConfig,
    SourceConfig,
    TopologyError,
)

# How long the enriched index remembers a deleted document's version (60 s by default): an
# enrichment read before the delete and written after it is refused as stale while it does.
# Source indexes need none: a deleted row stays there as a tombstone document, versioned.
ENRICHED_GC_DELETES = "1h"


def index_meta(config: PipelineConfig) -> dict[str, str]:
    """The ``_meta`` of the indexes Fusion creates: which pipeline owns them."""
    return {"fusion_pipeline": config.name}


def source_mapping(config: PipelineConfig, source: SourceConfig) -> dict[str, Any]:
    """A source index's mapping: its key a keyword (where the index keeps it), the hints."""
    field = config.sort_field(source)
    keyword = {"type": "keyword"}
    # When its record reached Kafka (epoch ms): where a key's latency starts.
    own: dict[str, Any] = {"ts": {"type": "date", "format": "epoch_millis"}}
    if field == STORED_KEY:
        own["key"] = keyword
    if source.children:
        # Where a child belongs and sorts (indexers/children.py); where it was is only read back.
        own |= {"parent": keyword, "order": keyword, "digest": {"type": "keyword", "index": False}}
        own["before"] = {"type": "object", "enabled": False}
    references = config.references_from(source.name)
    if references:
        # The ids of the rows a document names: a dimension row's change finds them by term.
        own["refs"] = {"properties": {r.name: keyword for r in references}}
    properties: dict[str, Any] = {RESERVED_FIELD: {"properties": own}}
    if field != STORED_KEY:
        properties[field] = keyword
    properties.update({name: {"type": kind} for name, kind in source.fields.items()})
    return {"dynamic": True, "properties": properties, "_meta": index_meta(config)}


def enriched_mapping(config: PipelineConfig) -> dict[str, Any]:
    properties: dict[str, Any] = {
        config.key_field: {"type": "keyword"},
        "fusion": {
            "properties": {
                "fired_at": {"type": "date"},
                "enriched_at": {"type": "date"},
                "last_record_at": {"type": "date"},
                "versions": {"type": "object"},
                "truncated": {"type": "object"},
                "children": {"type": "object", "enabled": False},  # reconcile reads it back
            }
        },
    }
    for part in config.parts:  # a chain's row after the row that names it, inside it
        source = config.part_source(part)
        nested = dict(source_mapping(config, source)["properties"])
        nested.pop(RESERVED_FIELD, None)  # a source's stored key stays in its own index
        # A children array is nested by default: a query then matches within one child.
        kind = source.mapping if source.children else "object"
        *path, name = part.split(SLOT_SEPARATOR)
        holder = properties
        for step in path:
            holder = holder[step]["properties"]
        holder[name] = {"type": kind, "properties": nested}
    return {"dynamic": True, "properties": properties, "_meta": index_meta(config)}


def ensure_indexes(es: Elasticsearch, config: PipelineConfig) -> list[str]:
    """Create every missing index with its mapping; return the ones created.

    An existing index that this pipeline created (its mapping's ``_meta``
    says so) gets the pipeline's refresh interval if it has another, so a
    changed ``refresh_interval`` takes effect at the next start; an index
    someone else made keeps its own.
    """
    wanted = {config.index_of(s): source_mapping(config, s) for s in config.sources}
    wanted[config.enriched_index] = enriched_mapping(config)
    created = []
    for index, mapping in wanted.items():
        refresh = refresh_interval(config, index)
        settings: dict[str, Any] = {"index": {"refresh_interval": refresh}}
        if index == config.enriched_index:
            settings["index"]["gc_deletes"] = ENRICHED_GC_DELETES
        if es.indices.exists(index=index):
            _update_refresh(es, config, index, refresh)
            continue
        try:
            es.indices.create(index=index, mappings=mapping, settings=settings)
        except BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise TopologyError(f"index {index}", str(exc.message)) from None
        created.append(index)
    return created


def refresh_interval(config: PipelineConfig, index: str) -> str:
    """The refresh interval the pipeline wants on one of its indexes."""
    if index == config.enriched_index:
        return config.pipeline.enriched_refresh_interval
    return config.pipeline.refresh_interval


def _update_refresh(es: Elasticsearch, config: PipelineConfig, index: str, refresh: str) -> None:
    mapping: dict[str, Any] = dict(es.indices.get_mapping(index=index))
    found_mapping: dict[str, Any] = next(iter(mapping.values()), {})
    meta = found_mapping.get("mappings", {}).get("_meta", {})
    if meta.get("fusion_pipeline") != config.name:
        return
    found = dict(es.indices.get_settings(index=index, name="index.refresh_interval"))
    settings: dict[str, Any] = next(iter(found.values()), {})
    current = settings.get("settings", {}).get("index", {}).get("refresh_interval")
    if current != refresh:
        es.indices.put_settings(index=index, settings={"index": {"refresh_interval": refresh}})
