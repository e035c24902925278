"""The names the pipeline reports under: one home for each, imported by every writer.

An alert is something wrong right now (a server being retried, a gap in a
topic), shown first on the status line and served by the Prometheus endpoint
until it clears; the same name sets it and clears it, wherever it is raised.
"""

from __future__ import annotations

KAFKA_ALERT = "kafka"  # Kafka unreachable or refusing, being retried
ES_ALERT = "elasticsearch"  # Elasticsearch unreachable or overloaded, being retried
DATA_LOSS_ALERT = "data_loss"  # source records deleted before they were read
REPLAY_ALERT = "replay"  # a batch replayed without its exactly-once markers
STATE_OUTLIVED_ALERT = "state_outlived"  # stopped longer than the counter remembers keys
# Elasticsearch answering 429: its thread pools' queues are full (the stages retry).
ES_BACKPRESSURE_ALERT = "elasticsearch_backpressure"

# Counts. Tasks and queries count under these names; only fusion.observe.figures
# reads them back. The JVM's writers count the counter's under the same names
# (fusion.contract.MetricNames, held to these by tests/unit/observe/test_names.py).

# Each source's indexer: indexer.<source>.<what> (what: one of SOURCE_COUNTS).
SOURCE_RECORDS = "records"  # read from the topic
SOURCE_INDEXED = "indexed"  # confirmed by Elasticsearch
SOURCE_ACKS = "acks"  # published for confirmed documents
SOURCE_STALE = "stale"  # older than what the index holds
SOURCE_BULK_REQUESTS = "bulk_requests"
SOURCE_LOST = "lost"  # deleted from the topic before they were read
SOURCE_TOMBSTONES = "tombstones"  # null values of change-event topics: dropped, counted
SOURCE_DELETED = "deleted"  # deletes applied (a tombstone document indexed, acked)
DLQ = "dlq"  # every stage's dead letters: <stage>.dlq, indexer.<source>.dlq


def source_count(source: str, what: str) -> str:
    """The name one source's indexer counts ``what`` under."""
    return f"indexer.{source}.{what}"


def lost_in_partition(source: str, partition: int) -> str:
    """Records of ``source`` lost in one partition (``fusion status`` names the partition)."""
    return f"{source_count(source, SOURCE_LOST)}@{partition}"


# The counter.
COUNTER_KEYS = "counter.keys"  # keys seen for the first time
COUNTER_FIRED = "counter.fired"
COUNTER_FIRED_LATE = "counter.fired_late"  # fired after being reported incomplete
COUNTER_UPDATED = "counter.updated"
COUNTER_INCOMPLETE = "counter.incomplete"
COUNTER_DLQ = "counter.dlq"
COUNTER_DELETED = "counter.deleted"  # fired keys whose enriched document their deletes removed

# The enricher (in the counter's task or its own query) and reconcile.
ENRICHER_READY = "enricher.ready"  # events read to enrich
ENRICHER_BATCHES = "enricher.batches"
ENRICHER_ENRICHED = "enricher.enriched"  # enriched documents Elasticsearch confirmed
ENRICHER_UPDATED = "enricher.updated"
ENRICHER_PARTIAL = "enricher.partial"
ENRICHER_STALE = "enricher.stale"
ENRICHER_DELETED = "enricher.deleted"  # enriched documents deleted (their sources were)
ENRICHER_BULK_REQUESTS = "enricher.bulk_requests"
ENRICHER_ES_REQUESTS = "enricher.es_requests"  # lookups: GETs or _mgets
ENRICHER_DOCS_FETCHED = "enricher.docs_fetched"
ENRICHER_DLQ = "enricher.dlq"
ENRICHER_CHILDREN = "enricher.children"  # children rows found by the arrays' searches
ENRICHER_TRUNCATED = "enricher.truncated"  # arrays cut at max_children(_bytes)

# Milliseconds the tasks spent in each stage, summed over tasks: where a batch's
# time goes beside Spark's own phases (:func:`query_phase_ms`; docs/benchmark.md).
STAGE_INDEX_PARSE = "ms.index.parse"  # records parsed, bulk actions built
STAGE_INDEX_WRITE = "ms.index.write"  # the bulk write, refresh=wait_for included
STAGE_INDEX_SLOTS = "ms.index.slots"  # the rows a referrer's records name, looked up
STAGE_INDEX_FANOUT = "ms.index.fanout"  # a changed row's first fan-out page
STAGE_INDEX_CHILDREN = "ms.index.children"  # where children were, read before they move
STAGE_ENRICH_LOOKUP = "ms.enrich.lookup"  # the group's _mget
STAGE_ENRICH_BUILD = "ms.enrich.build"  # the enriched documents built
STAGE_ENRICH_WRITE = "ms.enrich.write"  # their bulk write
STAGES = (
    STAGE_INDEX_PARSE, STAGE_INDEX_WRITE, STAGE_INDEX_SLOTS, STAGE_INDEX_FANOUT,
    STAGE_INDEX_CHILDREN, STAGE_ENRICH_LOOKUP, STAGE_ENRICH_BUILD, STAGE_ENRICH_WRITE,
)  # fmt: skip

# Dimensions' fan-outs (docs/dimensions.md): requests asked (a dimension row written) and
# continued (a page done, more to go), requests read, slot acks published for the keys
# found, fan-outs finished, malformed requests. Pending: asked + continued - read.
FANOUT_ASKED = "fanout.asked"
FANOUT_UNCHANGED = "fanout.unchanged"  # rows written again as they were: no fan-out
FANOUT_CONTINUED = "fanout.continued"
FANOUT_REQUESTS = "fanout.requests"
FANOUT_KEYS = "fanout.keys"
FANOUT_DONE = "fanout.done"
FANOUT_DLQ = "fanout.dlq"
SLOT_ACKS = "counter.slot_acks"  # slot acks the single query read back and handed on
# Counted only by a pipeline with dimensions (its markers have room for them).
DIMENSION_COUNTS = (
    FANOUT_ASKED, FANOUT_UNCHANGED, FANOUT_CONTINUED, FANOUT_REQUESTS, FANOUT_KEYS, FANOUT_DONE,
    FANOUT_DLQ, SLOT_ACKS, STAGE_INDEX_SLOTS, STAGE_INDEX_FANOUT,
)  # fmt: skip

# Every task's writer (the executors' JVM): a batch found published already, Kafka
# calls retried within the budget, records spilled to disk until the commit.
TASKS_REPLAYED = "tasks.replayed"
KAFKA_RETRIES = "kafka.retries"
TASKS_SPILLED = "tasks.spilled_records"

ES_RETRIES = "es.retries"  # Elasticsearch requests retried, every stage's
ES_REJECTED = "es.rejected"  # requests the nodes rejected (429) while the driver watched

# A deadline bucket's timers, set and cleared: clock.<bucket, epoch ms>.
CLOCK_PREFIX = "clock."

# Latency from a key's last source record to its enriched document, as a sketch
# (fusion.observe.sketch): a count per bin, latency.q<level>_<index>, and their sum in ms.
LATENCY_SKETCH_PREFIX = "latency.q"
LATENCY_SUM = "latency.sum_ms"
# Keys whose latency passed [metrics] latency_objective_seconds (counted exactly, not
# from the sketch: its bins merge, and a count read from them could go down).
LATENCY_OVER_OBJECTIVE = "latency.over_objective"


def query_input(query: str) -> str:
    """Rows the query's batches read (Spark's own count)."""
    return f"input.{query}"


def query_running(query: str) -> str:
    """1 from the query's start to its end, as Spark's listener reports them."""
    return f"running.{query}"


def query_busy_ms(query: str) -> str:
    """Time the query spent in batches that read rows."""
    return f"busy_ms.{query}"


def query_batches(query: str) -> str:
    """The query's batches that read rows."""
    return f"batches.{query}"


def query_phase_ms(query: str, phase: str) -> str:
    """Time the query's batches that read rows spent in one phase Spark times
    (``durationMs``: ``latestOffset``, ``queryPlanning``, ``walCommit``,
    ``addBatch``, ``commitOffsets``...)."""
    return f"phase_ms.{query}.{phase}"


def first_input(query: str) -> str:
    return f"first_input.{query}"


def first_busy_ms(query: str) -> str:
    return f"first_busy_ms.{query}"


def first_batch_at_ms(query: str) -> str:
    """When the query's first batch that read rows started (epoch ms, Spark's trigger time)."""
    return f"first_batch_at_ms.{query}"


def state_updated(query: str) -> str:
    return f"state.{query}.updated"


def state_rows(query: str) -> str:
    return f"state.{query}.rows"


def driver_peak_mb(process: str) -> str:
    """The driver's peak memory, ``python`` or ``jvm``."""
    return f"driver.{process}_peak_mb"
