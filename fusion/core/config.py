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

The key lifecycle settings (``timeout``, ``on_timeout``, ``on_update``,
``state_ttl``) are durations like ``"20s"``, ``"10m"``, ``"7d"``.

Names of indexes, topics and the checkpoint directory derive from the pipeline
name unless set explicitly.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from fusion.core.settings import Settings

FieldType = Literal[
    "keyword", "text", "long", "integer", "double", "float", "boolean", "date", "object"
]
LookupMode = Literal["batched", "per-source"]
# What a key whose deadline passed with required sources missing leaves behind:
# an incomplete event only, or also a partial enriched document ("complete": false).
OnTimeout = Literal["incomplete", "partial"]
# What a change to an already-enriched key's source does: rewrite its enriched document, or not.
OnUpdate = Literal["reenrich", "ignore"]
# Where a fired key is enriched: in the counter's own output task (one micro-batch
# hop less: the default), or by an enricher query of its own, which reads the
# ready topic (a deployment that runs the enricher apart from the counter).
EnrichIn = Literal["counter", "enricher"]
# How the stages run: "single", one Spark query that indexes, counts and enriches
# in each micro-batch (a key is enriched in the batch its last source arrives in);
# or "stages", a query per stage handing over through Kafka topics, each of which
# `fusion run --only` can run in a process of its own.
Layout = Literal["single", "stages"]
# Which code keeps the counter's keyed state: the JVM processor (fast, compiled on
# first use) or the Python one (the decisions' specification itself, several times
# slower: every state call is a round trip to Spark's state server).
CounterEngine = Literal["jvm", "python"]

# The enriched document's object of Fusion's own fields (fired_at, versions, ...).
RESERVED_FIELD = "fusion"
# Room for what a record carries besides its payload: a dead letter's metadata,
# a record batch's header.
MESSAGE_HEADROOM = 64 * 1024

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_STRICT = ConfigDict(frozen=True, extra="forbid")


def _check_name(value: str) -> str:
    # Names become parts of Elasticsearch index names, which must be lowercase.
    if not _NAME.match(value):
        raise ValueError(
            f"{value!r} must be lowercase letters, digits, '-' or '_' (it names indexes and topics)"
        )
    return value


def parse_duration(value: object) -> float | None:
    """``"90s"``, ``"10m"``, ``"2h"``, ``"7d"``, ``"250ms"`` or a number of seconds, as seconds."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        seconds = value
    else:
        match = _DURATION.match(str(value))
        if match is None:
            raise ValueError(f'{value!r} is not a duration; write e.g. "90s", "10m", "2h" or "7d"')
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]
    if seconds is not None and seconds <= 0:
        raise ValueError(f"{value!r} must be a positive duration")
    return None if seconds is None else float(seconds)


Duration = Annotated[float | None, BeforeValidator(parse_duration)]
PositiveDuration = Annotated[float, BeforeValidator(parse_duration)]

_SPARK_UNITS = {"millisecond": "ms", "milliseconds": "ms", "second": "s", "seconds": "s",
                "minute": "m", "minutes": "m"}  # fmt: skip
_ES_INTERVAL = re.compile(r"^(-1|\d+(ms|s|m|h|d))$")


def parse_trigger(value: object) -> str:
    """A trigger interval as Spark takes it (``"250 milliseconds"``), from ``"250ms"``,
    ``"1s"``, ``"0"`` (as fast as the queries go) or Spark's own spelling."""
    text = str(value).strip().lower()
    words = text.split()
    if len(words) == 2 and words[1] in _SPARK_UNITS:
        text = words[0] + _SPARK_UNITS[words[1]]
    if text in ("0", "0s", "0ms"):
        return "0 milliseconds"
    match = _DURATION.match(text)
    if match is None or match.group(2) not in ("ms", "s", "m"):
        raise ValueError(
            f'{value!r} is not a trigger interval; write e.g. "250ms", "1s" or "0" (no pause)'
        )
    return f"{round(float(match.group(1)) * _UNIT_SECONDS[match.group(2)] * 1000)} milliseconds"


def check_refresh_interval(value: str) -> str:
    """An Elasticsearch refresh interval: ``"200ms"``, ``"1s"``, ``"30s"`` or ``"-1"`` (off)."""
    if not _ES_INTERVAL.match(value.strip()):
        raise ValueError(
            f'{value!r} is not an Elasticsearch interval; write e.g. "200ms", "1s" or "-1"'
        )
    return value.strip()


TriggerInterval = Annotated[str, BeforeValidator(parse_trigger)]
RefreshInterval = Annotated[str, BeforeValidator(check_refresh_interval)]


class SourceConfig(BaseModel):
    """One partial stream: its topic, its index and the mapping hints for its fields."""

    model_config = _STRICT

    name: str
    topic: str | None = None
    index: str | None = None
    fields: dict[str, FieldType] = Field(default_factory=dict)
    # Override the pipeline's defaults for this source (None: use [pipeline]'s).
    required: bool | None = None
    timeout: Duration = None

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
    # A local path or any URI Spark can write to (file://, hdfs://, s3a://, ...).
    checkpoint_dir: str | None = None
    topic_partitions: int = Field(default=2, ge=1)
    incomplete_topic: str | None = None
    updates_topic: str | None = None
    lookup: LookupMode = "batched"
    layout: Layout = "single"
    enrich_in: EnrichIn = "counter"
    counter_engine: CounterEngine = "jvm"
    mget_chunk: int = Field(default=1000, ge=1, le=10_000)
    # One bulk request per micro-batch in the common case: refresh=wait_for then
    # waits for one refresh per batch instead of one per chunk.
    bulk_chunk: int = Field(default=20_000, ge=1)
    # Large micro-batches under a backlog: the counter pays its state round trips
    # once per key and batch, so fewer, larger batches cost less.
    max_offsets_per_trigger: int = Field(default=100_000, ge=1)
    # Elasticsearch's refresh interval on the source indexes: an indexer task's
    # bulk write waits for the next refresh (refresh=wait_for) before it acks,
    # so this bounds the index hop; each refresh costs Elasticsearch CPU.
    refresh_interval: RefreshInterval = "200ms"
    # ... and on the enriched index, whose writes do not wait for a refresh: how
    # soon an enriched document is searchable after its record is on the topic.
    enriched_refresh_interval: RefreshInterval = "1s"
    # How often each query looks for new input when it is idle (a batch that
    # takes longer is followed by the next at once).
    trigger_interval: TriggerInterval = "100 milliseconds"
    max_record_bytes: int = Field(default=1024 * 1024, ge=1)
    # What a task holds at once: it works through its partition in chunks of
    # about this many bytes (source records in, source documents looked up),
    # and its executor spills output beyond it to local disk until the commit.
    # 4 MiB: a Python worker holds several copies of a chunk, and local mode
    # runs 8 tasks at once; 16 MiB cost 130 MB more per worker at 500 KB
    # records and bought nothing in a burst of 1 KB ones (docs/benchmark.md).
    task_chunk_bytes: int = Field(default=4 * 1024 * 1024, ge=64 * 1024, lt=2**31)
    # How long a stage retries an unreachable Elasticsearch or Kafka before its query fails.
    retry_budget_seconds: float = Field(default=300.0, gt=0)
    # Key lifecycle (processing time, from the key's first ack): sources are
    # required unless marked otherwise; with a timeout a key that still misses a
    # required source is reported incomplete; without one it waits (up to state_ttl).
    required: bool = True
    timeout: Duration = None
    on_timeout: OnTimeout = "incomplete"
    on_update: OnUpdate = "reenrich"
    # How finely deadlines are scheduled: a deadline fires within this (plus one
    # micro-batch) of its time; a pipeline idles between deadline buckets.
    deadline_resolution: PositiveDuration = 1.0
    # How long the counter remembers a key after its last change: fired keys
    # watch for updates, expired ones for a late source, for this long.
    state_ttl: Duration = 7 * 86400.0

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

    @model_validator(mode="after")
    def _check_source_names(self) -> PipelineConfig:
        # The enriched document nests each source under its name, next to the
        # key field and Fusion's own "fusion" object: a source named like
        # either would overwrite them.
        for source in self.sources:
            if source.name in (self.pipeline.key_field, RESERVED_FIELD):
                raise ValueError(
                    f"source name {source.name!r} is taken: the enriched document keeps the "
                    f"key in {self.pipeline.key_field!r} and Fusion's fields in "
                    f"{RESERVED_FIELD!r}; rename the source"
                )
        return self

    @model_validator(mode="after")
    def _check_lifecycle(self) -> PipelineConfig:
        if not self.required_sources:
            raise ValueError("at least one source must be required (required = true)")
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
    def required_sources(self) -> tuple[str, ...]:
        default = self.pipeline.required
        return tuple(
            s.name for s in self.sources if (s.required if s.required is not None else default)
        )

    @property
    def timeouts(self) -> dict[str, float | None]:
        """Each source's completion timeout in seconds (None: wait as long as state lives)."""
        default = self.pipeline.timeout
        return {s.name: s.timeout if s.timeout is not None else default for s in self.sources}

    @property
    def max_record_bytes(self) -> int:
        return self.pipeline.max_record_bytes

    @property
    def message_limit(self) -> int:
        """The largest key + value a stage publishes whole to one of its output topics.

        An enriched document joins up to N source records of up to
        ``max_record_bytes`` each; a dead letter carries one record plus its
        metadata. An output still larger (JSON escaping can grow a record)
        becomes a dead letter whose original is cut (:mod:`fusion.core.events`).
        """
        return (len(self.sources) + 1) * self.max_record_bytes + MESSAGE_HEADROOM

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
    def incomplete_topic(self) -> str:
        return self.pipeline.incomplete_topic or f"{self.name}.incomplete"

    @property
    def updates_topic(self) -> str:
        return self.pipeline.updates_topic or f"{self.name}.updated"

    @property
    def markers_topic(self) -> str:
        """Compacted topic of each query's last batch (:mod:`fusion.kafka.exactly_once`)."""
        return self.pipeline.markers_topic or f"{self.name}.markers"

    @property
    def clock_topic(self) -> str:
        """The counter's clock: a tick when a deadline is due (:mod:`fusion.counter.clock`)."""
        return f"{self.name}.clock"

    @property
    def has_deadlines(self) -> bool:
        """Whether keys have deadlines: a source's timeout, or ``state_ttl`` for a required
        source without one (the counter then runs the deadline clock)."""
        if any(timeout is not None for timeout in self.timeouts.values()):
            return True
        return self.pipeline.state_ttl is not None and bool(self.required_sources)

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

    @property
    def counter_query(self) -> str:
        """The query that keeps the counter's state: ``single``, or ``counter`` in stages."""
        return "single" if self.pipeline.layout == "single" else "counter"

    def checkpoint(self, query: str) -> str:
        """The checkpoint URI of one query (``indexer-<source>``, ``counter``, ``enricher``)."""
        return f"{self.checkpoint_dir}/{query}"

    def enricher_topics(self) -> list[str]:
        """Ready events; updates unless ignored; incomplete keys if they get partial documents."""
        topics = [self.ready_topic]
        if self.pipeline.on_update == "reenrich":
            topics.append(self.updates_topic)
        if self.pipeline.on_timeout == "partial":
            topics.append(self.incomplete_topic)
        return topics

    def all_indexes(self) -> list[str]:
        """Every index the pipeline writes: one per source, and the enriched one."""
        return [self.index_of(source) for source in self.sources] + [self.enriched_index]

    def all_topics(self) -> list[str]:
        """Every topic the pipeline reads or writes."""
        sources = [self.topic_of(source) for source in self.sources]
        return [*sources, *self.output_topics(), self.markers_topic, self.clock_topic]
