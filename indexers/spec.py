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
    Slot,
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
    slots: tuple[Slot, ...]  # a key's slots starting at its records (none for a dimension)
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
    # By slot: where the documents naming its last hop's row are (a chain's: the dimension
    # before it), and by dimension: the slots ending at its rows, which its changes go to.
    referrers: Mapping[str, Referrer]
    naming: Mapping[str, tuple[str, ...]]
    slots: tuple[Slot, ...]
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

    def slot(self, name: str) -> Slot:
        return next(slot for slot in self.slots if slot.name == name)


def index_spec(config: PipelineConfig, sources: Sequence[str]) -> IndexSpec:
    """The slice of ``config`` that the tasks indexing ``sources`` need."""
    pipeline = config.pipeline
    return IndexSpec(
        sources={name: _source(config, name) for name in sources},
        indexes={s.name: config.index_of(s) for s in config.sources},
        referrers={s.name: _referrer(config, s.hops[-1].referrer) for s in config.key_slots},
        naming={
            d: tuple(s.name for s in config.key_slots if s.dimension == d)
            for d in config.dimensions
        },
        slots=config.key_slots,
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
        slots=tuple(slot for slot in config.key_slots if slot.referrer == name),
        dimension=bool(source.dimension),
        parent=source.parent,
        order_by=(source.order_by or config.key_of(source)) if source.children else None,
    )


def _referrer(config: PipelineConfig, name: str) -> Referrer:
    source = config.source(name)
    return Referrer(config.index_of(source), config.sort_field(source))
