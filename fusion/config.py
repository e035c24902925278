"""The pipeline configuration: which sources to join on which key, and where everything goes.

A pipeline file is a settings file (see :mod:`fusion.settings`) plus a
``[pipeline]`` table and two or more ``[[sources]]``::

    [pipeline]
    name = "healthcare"
    key_field = "txn_id"

    [[sources]]
    name = "billing"
    fields = { amount = "double", currency = "keyword" }

    [[sources]]
    name = "insurance"

Names of indexes, topics and the checkpoint directory derive from the pipeline
name unless set explicitly.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fusion.settings import Settings

FieldType = Literal[
    "keyword", "text", "long", "integer", "double", "float", "boolean", "date", "object"
]
LookupMode = Literal["batched", "per-source"]
# "naive" exists for the benchmark: N-1 lookups per arriving record instead of a counter.
PipelineMode = Literal["counted", "naive"]
# The counter's Spark operator: transformWithState (Row-based) or applyInPandasWithState.
CounterImpl = Literal["transform-with-state", "pandas-state"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_STRICT = ConfigDict(frozen=True, extra="forbid")


def _check_name(value: str) -> str:
    # Names become parts of Elasticsearch index names, which must be lowercase.
    if not _NAME.match(value):
        raise ValueError(
            f"{value!r} must be lowercase letters, digits, '-' or '_' (it names indexes and topics)"
        )
    return value


class SourceConfig(BaseModel):
    """One partial stream: its topic, its index and the mapping hints for its fields."""

    model_config = _STRICT

    name: str
    topic: str | None = None
    index: str | None = None
    fields: dict[str, FieldType] = Field(default_factory=dict)

    _valid_name = field_validator("name")(_check_name)


class PipelineSection(BaseModel):
    """The ``[pipeline]`` table."""

    model_config = _STRICT

    name: str
    key_field: str
    acks_topic: str | None = None
    ready_topic: str | None = None
    enriched_topic: str | None = None
    dlq_topic: str | None = None
    markers_topic: str | None = None
    enriched_index: str | None = None
    checkpoint_dir: Path | None = None
    topic_partitions: int = Field(default=2, ge=1)
    mode: PipelineMode = "counted"
    counter: CounterImpl = "transform-with-state"
    lookup: LookupMode = "batched"
    mget_chunk: int = Field(default=1000, ge=1, le=10_000)
    # One bulk request per micro-batch in the common case: refresh=wait_for then
    # waits for one refresh per batch instead of one per chunk.
    bulk_chunk: int = Field(default=20_000, ge=1)
    # Large micro-batches under a backlog: the counter pays its state round trips
    # once per key and batch, so fewer, larger batches cost less.
    max_offsets_per_trigger: int = Field(default=100_000, ge=1)
    refresh_interval: str = "1s"
    trigger_interval: str = "500 milliseconds"
    max_record_bytes: int = Field(default=1024 * 1024, ge=1)
    # How long a stage retries an unreachable Elasticsearch or Kafka before its query fails.
    retry_budget_seconds: float = Field(default=300.0, gt=0)

    _valid_name = field_validator("name")(_check_name)

    @field_validator("key_field")
    @classmethod
    def _check_key_field(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name the field that holds the join key")
        return value


class PipelineConfig(Settings):
    """Everything ``fusion run`` needs; build it with :meth:`Settings.load`."""

    pipeline: PipelineSection
    sources: list[SourceConfig] = Field(min_length=2)

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, sources: list[SourceConfig]) -> list[SourceConfig]:
        seen: set[str] = set()
        for source in sources:
            if source.name in seen:
                raise ValueError(f"duplicate source name {source.name!r}")
            seen.add(source.name)
        return sources

    @property
    def max_record_bytes(self) -> int:
        return self.pipeline.max_record_bytes

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

    def topic_of(self, source: SourceConfig) -> str:
        return source.topic or source.name

    def index_of(self, source: SourceConfig) -> str:
        return source.index or f"{self.name}-{source.name}"

    @property
    def acks_topic(self) -> str:
        return self.pipeline.acks_topic or f"{self.name}.acks"

    @property
    def ready_topic(self) -> str:
        return self.pipeline.ready_topic or f"{self.name}.ready"

    @property
    def enriched_topic(self) -> str:
        return self.pipeline.enriched_topic or f"{self.name}.enriched"

    @property
    def dlq_topic(self) -> str:
        return self.pipeline.dlq_topic or f"{self.name}.dlq"

    @property
    def markers_topic(self) -> str:
        """Compacted topic of the last committed batch id per query (see :mod:`fusion.output`)."""
        return self.pipeline.markers_topic or f"{self.name}.markers"

    @property
    def enriched_index(self) -> str:
        return self.pipeline.enriched_index or f"{self.name}-enriched"

    @property
    def checkpoint_dir(self) -> Path:
        configured = self.pipeline.checkpoint_dir
        if configured is not None:
            return configured.expanduser().resolve()
        return self.runtime.home / "checkpoints" / self.name

    def all_topics(self) -> list[str]:
        """Every topic the pipeline reads or writes."""
        sources = [self.topic_of(source) for source in self.sources]
        return [
            *sources,
            self.acks_topic,
            self.ready_topic,
            self.enriched_topic,
            self.dlq_topic,
            self.markers_topic,
        ]
