"""The pipeline configuration: which sources to join on which key, and where everything goes.

A pipeline file is a settings file (see :mod:`fusion.core.settings`) plus a
``[pipeline]`` table and two or more ``[[sources]]``::

    [pipeline]
    name = "healthcare"
    key_field = "txn_id"

    [[sources]]
    name = "billing"
    fields = { amount = "double", currency = "keyword" }

    [[sources]]
    name = "insurance"
    required = false        # optional: waited for until the deadline only

Durations read like ``"20s"``, ``"10m"``, ``"7d"``; index, topic and checkpoint names
derive from the pipeline name unless set.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator, model_validator

from fusion.core.config_tables import PipelineSection, SourceConfig
from fusion.core.config_topics import TopicNames
from fusion.core.config_values import key_spec
from fusion.core.connections import check_registry
from fusion.core.relations import (
    Reference,
    Slot,
    check_names,
    check_sources,
    part_names,
    part_sources,
    part_timeouts,
    references_of,
    required_parts,
    slots_of,
)
from fusion.core.settings import Settings

# The enriched document's object of Fusion's own fields (fired_at, versions, ...).
RESERVED_FIELD = "fusion"
# Where a source document keeps its join key when the key is not a top-level field of
# it (a path, the Kafka record key): the index is walked in key order by it.
STORED_KEY = f"{RESERVED_FIELD}.key"
# Where a document keeps the ids of the dimension rows it names (docs/dimensions.md): a
# keyword per dimension, so that a row's change finds its documents with a term query.
STORED_REFS = f"{RESERVED_FIELD}.refs"
# No part of the record: ts is its Kafka timestamp (ms); a child's place (parent, order,
# digest, before) is indexers/children.py's.
STORED_OWN = ("key", "refs", "ts", "parent", "order", "digest", "before")


# Room for what a record carries besides its payload: a dead letter's metadata,
# a record batch's header.
MESSAGE_HEADROOM = 64 * 1024


class PipelineConfig(TopicNames, Settings):
    """Everything ``fusion run`` needs; build it with :meth:`Settings.load`."""

    pipeline: PipelineSection
    sources: list[SourceConfig] = Field(min_length=2)

    @field_validator("sources")
    @classmethod
    def _check_sources(cls, sources: list[SourceConfig]) -> list[SourceConfig]:
        check_sources(sources)  # unique names, children, references
        return sources

    @model_validator(mode="after")
    def _check_source_names(self) -> PipelineConfig:
        check_registry(((s.name, s.format) for s in self.sources), self.registry)
        check_names(self.sources, self.pipeline.key_field, RESERVED_FIELD)
        return self

    @model_validator(mode="after")
    def _check_lifecycle(self) -> PipelineConfig:
        # Every source may be optional: a key then fires on its first part and each later
        # change re-enriches it (a FULL JOIN of tables, docs/cdc.md).
        if self.pipeline.layout == "single" and self.pipeline.enrich_in == "enricher":
            raise ValueError(
                'enrich_in = "enricher" needs layout = "stages" (a single query enriches '
                "in the counter's task)"
            )
        ttl = self.pipeline.state_ttl
        longest = max((t for t in self.timeouts.values() if t is not None), default=0.0)
        if ttl is not None and longest >= ttl:
            raise ValueError(
                f"state_ttl ({ttl:g} s) must be longer than the longest timeout ({longest:g} s), "
                "or keys would be forgotten before their deadline"
            )
        return self

    @property
    def references(self) -> tuple[Reference, ...]:
        """Which source names which dimension's rows, by which field (checked at load)."""
        return references_of(self.sources)

    def references_from(self, source: str) -> tuple[Reference, ...]:
        """The references of ``source``'s records (none for most sources)."""
        return tuple(r for r in self.references if r.referrer == source)

    def part_source(self, part: str) -> SourceConfig:
        """The source whose documents a part is: its own, or its slot's dimension."""
        return part_sources(self.sources, self.key_slots)[part]

    def references_to(self, dimension: str) -> tuple[Reference, ...]:
        """The references naming ``dimension``'s rows: a row's change fans out through each."""
        return tuple(r for r in self.references if r.dimension == dimension)

    @property
    def dimensions(self) -> tuple[str, ...]:
        """The sources keyed by their own key, joined through a reference."""
        return tuple(s.name for s in self.sources if s.dimension)

    @property
    def children(self) -> tuple[str, ...]:
        """The sources whose rows are a key's children, gathered into an array
        (docs/children.md)."""
        return tuple(s.name for s in self.sources if s.children)

    @property
    def fanout_source(self) -> str | None:
        """The source whose indexer query also works the fan-outs: the first that names
        dimension rows (a fan-out searches its index); None without dimensions."""
        return min((r.referrer for r in self.references), default=None)

    @property
    def parts(self) -> tuple[str, ...]:
        """What a key's enriched document holds, by name: each source keyed by the join key,
        each children source, and each reference's row (a dimension is none by itself)."""
        return part_names(self.sources, self.key_slots)

    @property
    def key_slots(self) -> tuple[Slot, ...]:
        """The rows a key holds by reference, one or a chain (docs/dimensions.md)."""
        return slots_of(self.sources, self.references)

    @property
    def slots(self) -> tuple[str, ...]:
        """The names of :attr:`key_slots`: parts of a key, as its sources are."""
        return tuple(slot.name for slot in self.key_slots)

    @property
    def required_parts(self) -> tuple[str, ...]:
        """The parts a key waits for: a reference's by its dimension's ``required``."""
        return required_parts(self.sources, self.key_slots, self.pipeline.required)

    @property
    def timeouts(self) -> dict[str, float | None]:
        """Each part's completion timeout in seconds (None: wait as long as state lives); a
        reference's is its dimension's. Children are not waited for: theirs is None."""
        return part_timeouts(self.sources, self.key_slots, self.pipeline.timeout)

    @property
    def max_record_bytes(self) -> int:
        return self.pipeline.max_record_bytes

    @property
    def message_limit(self) -> int:
        """The largest key + value a stage publishes whole to one of its output topics.

        An enriched document joins up to N source records of up to
        ``max_record_bytes`` each, and children arrays of up to
        ``max_children_bytes`` each; a dead letter carries one record plus its
        metadata. An output still larger (JSON escaping can grow a record)
        becomes a dead letter whose original is cut (:mod:`fusion.core.events`).
        """
        arrays = self.pipeline.max_children_bytes * len(self.children)
        return (len(self.sources) + 1) * self.max_record_bytes + arrays + MESSAGE_HEADROOM

    @property
    def topic_message_bytes(self) -> int:
        """``max.message.bytes`` of the topics Fusion writes, and its producers' request size:
        room for one record of :attr:`message_limit` in a record batch."""
        return self.message_limit + MESSAGE_HEADROOM

    def output_topics(self) -> list[str]:
        """The topics Fusion's stages write records to (not the sources, not its bookkeeping)."""
        return [
            self.acks_topic,
            self.ready_topic,
            self.enriched_topic,
            self.dlq_topic,
            self.incomplete_topic,
            self.updates_topic,
            *[self.fanout_topic, self.slots_topic] * bool(self.dimensions),
        ]

    @property
    def name(self) -> str:
        return self.pipeline.name

    @property
    def key_field(self) -> str:
        return self.pipeline.key_field

    @property
    def source_names(self) -> tuple[str, ...]:
        return tuple(source.name for source in self.sources)

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        raise KeyError(name)

    def key_of(self, source: SourceConfig) -> str:
        """Where ``source``'s join key is: its own ``key``, else ``[pipeline] key_field``."""
        return source.key or self.pipeline.key_field

    def sort_field(self, source: SourceConfig) -> str:
        """The keyword field ``source``'s index is walked in key order by (reconcile, rebuild):
        its key field when that is a top-level field of its documents, else :data:`STORED_KEY`."""
        spec = key_spec(self.key_of(source))
        if not spec.in_record_key and len(spec.path) == 1:
            return spec.path[0]
        return STORED_KEY

    def topic_of(self, source: SourceConfig) -> str:
        return source.topic or source.name

    @property
    def source_of_topic(self) -> dict[str, str]:
        """Each source topic, with the name of its source: the one map from one to the other."""
        return {self.topic_of(s): s.name for s in self.sources}

    def index_of(self, source: SourceConfig) -> str:
        return source.index or f"{self.name}-{source.name}"

    @property
    def has_deadlines(self) -> bool:
        """Whether keys have deadlines: a source's timeout, or ``state_ttl`` for a required
        source without one (the counter then runs the deadline clock)."""
        if any(timeout is not None for timeout in self.timeouts.values()):
            return True
        return self.pipeline.state_ttl is not None and bool(self.required_parts)

    @property
    def enriched_index(self) -> str:
        return self.pipeline.enriched_index or f"{self.name}-enriched"

    @property
    def checkpoint_dir(self) -> str:
        """Where the queries keep their checkpoints: a URI (a plain path becomes ``file://``)."""
        configured = self.pipeline.checkpoint_dir
        if configured is None:
            return (self.runtime.home / "checkpoints" / self.name).as_uri()
        if "://" in configured:
            return configured.rstrip("/")
        return Path(configured).expanduser().resolve().as_uri()

    def checkpoint(self, query: str) -> str:
        """The checkpoint URI of one query (``indexer-<source>``, ``counter``, ``enricher``)."""
        return f"{self.checkpoint_dir}/{query}"

    @property
    def lease_index(self) -> str:
        """Which process runs each component (:mod:`fusion.elastic.lease`)."""
        return f"{self.name}-fusion-lease"

    def all_indexes(self) -> list[str]:
        """Every index the pipeline writes: one per source, and the enriched one."""
        indexes = [self.index_of(source) for source in self.sources]
        return [*indexes, self.enriched_index, self.lease_index]

    def all_topics(self) -> list[str]:
        """Every topic the pipeline reads or writes."""
        sources = [self.topic_of(source) for source in self.sources]
        return [*sources, *self.output_topics(), self.markers_topic, self.clock_topic]
