"""What an enrichment knows of the pipeline: a slice of its configuration.

Built once on the driver (:func:`enrich_spec`) and shipped with the task that
enriches: the enricher's, the counter's with ``enrich_in = "counter"``, and
``fusion reconcile``'s. Which sources a key has and where each is, where the
enriched documents go, and how large a request may be: never the pipeline's
whole configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from elasticsearch import Elasticsearch

from fusion.core import STORED_KEY, ElasticsearchSettings, LookupMode, PipelineConfig
from fusion.elastic import RetryPolicy
from fusion.spark import elasticsearch


@dataclass(frozen=True)
class ChildArray:
    """How a children source's rows become a key's array (docs/children.md)."""

    max_children: int


@dataclass(frozen=True)
class PartSource:
    """A source as an enriched document takes its part: where its documents are, and what
    Fusion kept in them that the enriched document leaves out."""

    name: str
    index: str
    sort_field: str  # the field its index is scanned in key order by
    dimension: bool  # its rows are found by the ids a key names, not by the key
    stores_key: bool  # the key is kept in its documents
    names_rows: bool  # its documents keep the ids of the dimension rows they name
    array: ChildArray | None = None  # a children source's: its rows are a key's array


@dataclass(frozen=True)
class EnrichSpec:
    """Everything an enrichment needs: see the module's docstring."""

    key_field: str
    sources: tuple[PartSource, ...]
    required: tuple[str, ...]
    enriched_index: str
    enriched_topic: str
    incomplete_topic: str
    dlq_topic: str
    message_limit: int
    lookup: LookupMode
    mget_chunk: int
    bulk_chunk: int
    task_chunk_bytes: int
    max_record_bytes: int
    retry_budget_seconds: float
    elasticsearch: ElasticsearchSettings
    max_children_bytes: int = 8 * 1024 * 1024
    latency_objective: float = 3.0  # seconds: [metrics] latency_objective_seconds

    # Worked out once per worker: the enrichment asks for them per key and per row.
    @cached_property
    def source_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sources)

    @cached_property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sources if s.dimension)

    @cached_property
    def children(self) -> tuple[PartSource, ...]:
        return tuple(s for s in self.sources if s.array is not None)

    @cached_property
    def parts(self) -> tuple[PartSource, ...]:
        """The sources whose document a key has under its own key (no dimension, no children)."""
        return tuple(s for s in self.sources if not s.dimension and s.array is None)

    @cached_property
    def versioned(self) -> bool:
        """Whether a key's enriched version counts slot changes the counter alone knows (with
        dimensions or children): the version its document has is then read too."""
        return bool(self.dimensions or self.children)

    @cached_property
    def _by_name(self) -> dict[str, PartSource]:
        return {s.name: s for s in self.sources}

    def source(self, name: str) -> PartSource:
        return self._by_name[name]

    def es(self) -> Elasticsearch:
        """This worker's client (kept across tasks)."""
        return elasticsearch(self.elasticsearch)

    def retry(self) -> RetryPolicy:
        return RetryPolicy(budget_seconds=self.retry_budget_seconds)


def enrich_spec(config: PipelineConfig) -> EnrichSpec:
    """The slice of ``config`` that an enrichment needs."""
    pipeline = config.pipeline
    return EnrichSpec(
        key_field=config.key_field,
        sources=_parts(config, config.parts),
        required=config.required_parts,
        enriched_index=config.enriched_index,
        enriched_topic=config.enriched_topic,
        incomplete_topic=config.incomplete_topic,
        dlq_topic=config.dlq_topic,
        message_limit=config.message_limit,
        lookup=pipeline.lookup,
        mget_chunk=pipeline.mget_chunk,
        bulk_chunk=pipeline.bulk_chunk,
        task_chunk_bytes=pipeline.task_chunk_bytes,
        max_record_bytes=config.max_record_bytes,
        retry_budget_seconds=pipeline.retry_budget_seconds,
        elasticsearch=config.elasticsearch,
        max_children_bytes=pipeline.max_children_bytes,
        latency_objective=config.metrics.latency_objective_seconds,
    )


def _parts(config: PipelineConfig, names: Sequence[str]) -> tuple[PartSource, ...]:
    """Each part's source: a reference's is its dimension's, under the reference's name."""
    parts = []
    for name in names:
        source = config.part_source(name)
        sort_field = config.sort_field(source)
        parts.append(
            PartSource(
                name=name,
                index=config.index_of(source),
                sort_field=sort_field,
                dimension=bool(source.dimension),
                stores_key=sort_field == STORED_KEY,
                names_rows=bool(config.references_from(source.name)),
                array=ChildArray(source.max_children) if source.children else None,
            )
        )
    return tuple(parts)
