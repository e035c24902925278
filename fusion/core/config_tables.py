"""The pipeline file's own tables: ``[pipeline]`` and each ``[[sources]]``, as written.

What derives from them (topic and index names, the checkpoint of each query)
is :class:`fusion.core.config.PipelineConfig`'s.
"""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from fusion.core.config_values import (
    ChildMapping,
    CounterEngineName,
    Duration,
    EnrichIn,
    FieldType,
    Layout,
    LookupMode,
    OnDelete,
    OnTimeout,
    OnUpdate,
    PositiveDuration,
    RefreshInterval,
    SourceFormat,
    TriggerInterval,
    check_key,
    check_name,
)

STRICT = ConfigDict(frozen=True, extra="forbid")


class ReferenceTable(BaseModel):
    """A reference named otherwise than the dimension it names (``buyer = { dimension =
    "user", field = "buyer_id" }``): how one table is referenced twice."""

    model_config = STRICT

    dimension: str
    field: str

    _valid_field = field_validator("field")(check_key)


class SourceConfig(BaseModel):
    """One partial stream: its topic, its index and the mapping hints for its fields."""

    model_config = STRICT

    name: str
    topic: str | None = None
    index: str | None = None
    # Where this source's join key is (indexers/keys.py), if not [pipeline] key_field.
    key: str | None = None
    format: SourceFormat = "json"
    fields: dict[str, FieldType] = Field(default_factory=dict)
    # Check the declared fields per record (indexers/types.py): None takes [pipeline]'s; a
    # field of another type, or missing or null unless optional, is a dead letter.
    strict: bool | None = None
    optional_fields: list[str] = Field(default_factory=list)
    # Override the pipeline's defaults for this source (None: use [pipeline]'s).
    required: bool | None = None
    timeout: Duration = None
    # A table keyed by its own key, joined to the keys whose records name its rows
    # (fusion/core/relations/dimensions.py); and the rows this source's records name.
    dimension: bool = False
    references: dict[str, str | ReferenceTable] = Field(default_factory=dict)
    # Children (fusion/core/relations/children.py): each record a row with its own ``key`` that
    # names its parent's key at ``parent``; the enriched document holds them as an array
    # under the source's name, ordered by ``order_by`` (default: their own key), at most
    # ``max_children`` of them.
    parent: str | None = None
    order_by: str | None = None
    mapping: ChildMapping = "nested"
    max_children: int = Field(default=10_000, ge=1)

    _valid_name = field_validator("name")(check_name)

    @field_validator("references", mode="before")
    @classmethod
    def _check_references(cls, value: object) -> object:
        """Each reference as a path, or as a table naming its dimension; anything else is one
        line saying the two forms (pydantic's own error names the union's members)."""
        if not isinstance(value, dict):
            return value
        checked: dict[str, str | ReferenceTable] = {}
        for name, written in value.items():
            if isinstance(written, str):
                checked[name] = check_key(written)
                continue
            try:
                checked[name] = ReferenceTable.model_validate(written)
            except ValidationError:
                raise ValueError(
                    f'{name}: write the field that names the row ({name} = "<field>"), or '
                    f'{name} = {{ dimension = "<source>", field = "<field>" }}; found {written!r}'
                ) from None
        return checked

    @field_validator("key", "parent", "order_by")
    @classmethod
    def _check_key(cls, value: str | None) -> str | None:
        return None if value is None else check_key(value)

    @property
    def children(self) -> bool:
        """Whether its records are a key's children rather than one of its parts."""
        return self.parent is not None

    @model_validator(mode="after")
    def _check_optional_fields(self) -> SourceConfig:
        unknown = [name for name in self.optional_fields if name not in self.fields]
        if unknown:
            raise ValueError(
                f"optional_fields names {unknown[0]!r}, which fields does not declare: "
                f'add it to fields (e.g. {unknown[0]} = "keyword") or drop it'
            )
        return self

    def declared(self, strict: bool) -> tuple[dict[str, FieldType], list[str]] | None:
        """The fields to check per record, and the optional ones; None when not strict.

        ``strict``: the pipeline's default.
        """
        checked = self.strict if self.strict is not None else strict
        return (self.fields, self.optional_fields) if checked and self.fields else None


class PipelineSection(BaseModel):
    """The ``[pipeline]`` table."""

    model_config = STRICT

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
    # Partitions of the topics Fusion creates (sources it creates too). A micro-batch runs one
    # indexer task, one bulk request and one Kafka transaction per source partition: on a
    # small machine fewer, larger ones keep up with more (docs/benchmark.md, the levers).
    topic_partitions: int = Field(default=1, ge=1)
    incomplete_topic: str | None = None
    updates_topic: str | None = None
    lookup: LookupMode = "batched"
    layout: Layout = "single"
    enrich_in: EnrichIn = "counter"
    counter_engine: CounterEngineName = "jvm"
    mget_chunk: int = Field(default=1000, ge=1, le=10_000)
    # One bulk request per micro-batch in the common case: refresh=wait_for then
    # waits for one refresh per batch instead of one per chunk.
    bulk_chunk: int = Field(default=20_000, ge=1)
    # Large micro-batches under a backlog: the counter pays its state round trips
    # once per key and batch, so fewer, larger batches cost less.
    max_offsets_per_trigger: int = Field(default=100_000, ge=1)
    # A quiet stream's batches: with this set, a query starts a batch once it has this many
    # new records or, with fewer, once max_trigger_delay has passed since its last batch
    # (Spark's minOffsetsPerTrigger and maxTriggerDelay). Fewer, fuller batches cost fewer
    # cores; a record waits up to the delay (docs/benchmark.md, cores in proportion).
    min_offsets_per_trigger: int | None = Field(default=None, ge=1)
    max_trigger_delay: PositiveDuration = 1.0
    # Elasticsearch's refresh interval on the source indexes: an indexer task's
    # bulk write waits for the next refresh (refresh=wait_for) before it acks,
    # so this bounds the index hop; each refresh costs Elasticsearch CPU (at 50 ms
    # less than the shorter batches save, up to 40 % of the floor: docs/benchmark.md).
    refresh_interval: RefreshInterval = "50ms"
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
    on_delete: OnDelete = "reenrich"
    # How finely deadlines are scheduled: a deadline fires within this (plus one
    # micro-batch) of its time; a pipeline idles between deadline buckets.
    deadline_resolution: PositiveDuration = 1.0
    # How long the counter remembers a key after its last change: fired keys
    # watch for updates, expired ones for a late source, for this long.
    state_ttl: Duration = 7 * 86400.0
    # Replay a batch whose exactly-once markers Kafka expired (its output may repeat):
    # for one run, after the refusal that names it (`fusion run --replay-unmarked`).
    replay_unmarked: bool = False
    # Start without a lost checkpoint, the counter's state rebuilt from Elasticsearch and
    # Kafka: for one run, after the refusal that names it (`fusion run --rebuild-state`).
    rebuild_state: bool = False
    # A running `fusion run` renews the lease of each component it runs this often
    # (a third of it); a second process waits this long for a holder on another machine
    # to renew before it takes a component over (one killed on this machine, at once).
    lease_seconds: float = Field(default=15.0, ge=1.0)
    # A dimension row's fan-out: how many keys naming it one micro-batch gives slot acks
    # (docs/dimensions.md); the rest wait for the next batch, so no batch waits long.
    # 25,000: 46 % faster than 5,000 at 100,000 items, new keys at 0.86 of their rate
    # beside it; 50,000 added 3 % and took new keys to 0.62 (docs/benchmark.md).
    fanout_page: int = Field(default=25_000, ge=1, le=1_000_000)
    # Check each source's declared fields per record (a source's own strict overrides it).
    strict: bool = False
    # The most a key's children arrays may weigh in its enriched document (docs/children.md):
    # past it the array keeps its first rows, and fusion.truncated counts the others.
    # Elasticsearch takes requests of up to 100 MB; the enriched topic carries it too.
    max_children_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)

    _valid_name = field_validator("name")(check_name)

    @field_validator("key_field")
    @classmethod
    def _check_key_field(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name the field that holds the join key")
        return check_key(value)
