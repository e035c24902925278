"""What an indexing query's tasks know of the pipeline: a slice of its configuration.

Built once on the driver (:func:`index_spec`) and shipped with the task
function: an executor task reads the sources it indexes, the indexes it writes
and looks rows up in, and the topics it publishes to from here, never from the
pipeline's whole configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elasticsearch import Elasticsearch

from fusion.core import (
    STORED_KEY,
    ElasticsearchSettings,
    PipelineConfig,
    Reference,
    RegistrySettings,
    SourceFormat,
)
from fusion.elastic import RetryPolicy
from fusion.spark import elasticsearch
from indexers.types import Declared


@dataclass(frozen=True)
class SourceSlice:
    """One source as its indexer task reads and writes it."""

    name: str
    format: SourceFormat
    key: str  # the key's path in a record
    index: str
    stores_key: bool  # the key is kept in the document (a key path that is not a field)
    declared: Declared | None  # checked field by field (strict), else None
    references: tuple[Reference, ...]  # the dimension rows its records name
    dimension: bool  # its rows are a dimension's: a change fans out to the keys naming them
    # A children source's (indexers/children.py): where a row names its parent's key, and the
    # path its array is ordered by; None for any other source.
    parent: str | None = None
    order_by: str | None = None


@dataclass(frozen=True)
class Referrer:
    """Where the keys naming a dimension's row are: the referring source's index, and the
    field its pages are sorted by."""

    index: str
    sort_field: str


@dataclass(frozen=True)
class Outputs:
    """The topics an indexing task publishes to, and the largest record they take."""

    acks: str
    slots: str
    fanout: str
    dlq: str
    message_limit: int


@dataclass(frozen=True)
class IndexSpec:
    """Everything an indexing query's tasks need: see the module's docstring."""

    sources: Mapping[str, SourceSlice]  # the sources the query indexes, by name
    indexes: Mapping[str, str]  # every source's index by name: dimension rows are read there
    referrers: Mapping[str, Referrer]  # by reference
    naming: Mapping[str, tuple[str, ...]]  # by dimension: the references naming its rows
    outputs: Outputs
    elasticsearch: ElasticsearchSettings
    registry: RegistrySettings
    retry_budget_seconds: float
    max_record_bytes: int
    bulk_chunk: int
    fanout_page: int

    def es(self) -> Elasticsearch:
        """This worker's client (kept across tasks)."""
        return elasticsearch(self.elasticsearch)

    def retry(self) -> RetryPolicy:
        return RetryPolicy(budget_seconds=self.retry_budget_seconds)


def index_spec(config: PipelineConfig, sources: Sequence[str]) -> IndexSpec:
    """The slice of ``config`` that the tasks indexing ``sources`` need."""
    pipeline = config.pipeline
    return IndexSpec(
        sources={name: _source(config, name) for name in sources},
        indexes={s.name: config.index_of(s) for s in config.sources},
        referrers={r.name: _referrer(config, r.referrer) for r in config.references},
        naming={d: tuple(r.name for r in config.references_to(d)) for d in config.dimensions},
        outputs=Outputs(
            acks=config.acks_topic,
            slots=config.slots_topic,
            fanout=config.fanout_topic,
            dlq=config.dlq_topic,
            message_limit=config.message_limit,
        ),
        elasticsearch=config.elasticsearch,
        registry=config.registry,
        retry_budget_seconds=pipeline.retry_budget_seconds,
        max_record_bytes=config.max_record_bytes,
        bulk_chunk=pipeline.bulk_chunk,
        fanout_page=pipeline.fanout_page,
    )


def _source(config: PipelineConfig, name: str) -> SourceSlice:
    source = config.source(name)
    return SourceSlice(
        name=name,
        format=source.format,
        key=config.key_of(source),
        index=config.index_of(source),
        stores_key=config.sort_field(source) == STORED_KEY,
        declared=source.declared(config.pipeline.strict),
        references=config.references_from(name),
        dimension=bool(source.dimension),
        parent=source.parent,
        order_by=(source.order_by or config.key_of(source)) if source.children else None,
    )


def _referrer(config: PipelineConfig, name: str) -> Referrer:
    source = config.source(name)
    return Referrer(config.index_of(source), config.sort_field(source))
