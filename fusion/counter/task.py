"""The counter's executor side: one state partition's events of a batch, published and enriched.

The task gets the rows the counter's keyed state emitted
(:mod:`fusion.counter.rows`), turns them into Kafka records (events, dead
letters) and counts, and with ``enrich_in = "counter"`` enriches the keys that
fired, all for one Kafka transaction (:mod:`fusion.spark.tasks`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fusion.core import DeadLetter, PipelineConfig, dead_letter_records
from fusion.counter import clock
from fusion.counter.rows import OUTPUT_COLUMNS
from fusion.enricher import EnrichRequest, EnrichSpec, decided_event, enrich
from fusion.kafka import OutRecord
from fusion.observe import names
from fusion.spark import Job, TaskOutput, attributed, column

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class EventOutputs:
    """Where a counter task's events and dead letters go (a slice of the configuration)."""

    ready: str
    updates: str
    incomplete: str
    dlq: str
    message_limit: int
    partial: bool  # on_timeout = "partial": an expired key is enriched as incomplete
    deadline_resolution_ms: int  # the clock's buckets

    @classmethod
    def of(cls, config: PipelineConfig) -> EventOutputs:
        return cls(
            ready=config.ready_topic,
            updates=config.updates_topic,
            incomplete=config.incomplete_topic,
            dlq=config.dlq_topic,
            message_limit=config.message_limit,
            partial=config.pipeline.on_timeout == "partial",
            deadline_resolution_ms=int(config.pipeline.deadline_resolution * 1000),
        )


@dataclass(frozen=True)
class PublishEvents:
    """Task function: one state partition's events of a batch, for one Kafka transaction.

    ``enriches`` (the topology's: the single query, or the counter with
    ``enrich_in = "counter"``, what an enrichment needs, else None): the task
    also enriches the keys it fired (and
    updated, and expired with ``on_timeout = "partial"``): it looks their
    documents up, writes the enriched documents, and hands the enriched
    records to the writer with the events (a group of keys at a time), for the
    same transaction. The transactional id is derived from the state
    partition: a replay recomputes the same events for the same partition
    from the same state.
    """

    outputs: EventOutputs
    enriches: EnrichSpec | None

    def __call__(self, job: Job, rows: pa.Table) -> Iterator[TaskOutput]:
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None, "PublishEvents runs in a Spark task"
        task = f"p{context.partitionId()}"
        events = partition_events(self.outputs, rows, self.enriches is not None)
        yield TaskOutput(task, events.records, events.counts)
        if events.to_enrich and self.enriches is not None:
            spec = self.enriches
            for part in enrich(spec, spec.es(), events.to_enrich, spec.retry()):
                yield TaskOutput(task, part.records, part.counts)


@dataclass(frozen=True)
class PartitionEvents:
    """One state partition's events of a batch: records, counts, and the keys to enrich."""

    records: list[OutRecord]
    counts: dict[str, int]
    to_enrich: list[EnrichRequest]


def partition_events(outputs: EventOutputs, rows: pa.Table, enriches: bool) -> PartitionEvents:
    """The counter's output rows as Kafka records (events, dead letters) and counts.

    ``enriches``: also the events whose keys the task enriches now; they are
    not on their topics yet (they go out in the same transaction), so a dead
    letter about one names no offset (-1).
    """
    topics = {
        "ready": outputs.ready,
        "updated": outputs.updates,
        "incomplete": outputs.incomplete,
        "deleted": outputs.updates,  # with the updates: the enriched document goes
    }
    enriched = {"ready", "updated", "deleted"} | ({"incomplete"} if outputs.partial else set())
    resolution = outputs.deadline_resolution_ms
    out: list[OutRecord] = []
    to_enrich: list[EnrichRequest] = []
    kinds: Counter[str] = Counter()
    # Counts the counter passes on, not its own: the clock's deadline buckets, and in a
    # single query the indexer's counts.
    passed_on: Counter[str] = Counter()
    columns = zip(*(column(rows, name) for name in OUTPUT_COLUMNS), strict=True)
    for kind, key, event, reason, raw, topic, partition, offset, name, value, by in columns:
        kinds[kind] += 1
        if kind == "count":  # passed through: the indexer's count, and who counted it
            passed_on[name] += value
            passed_on[attributed(name, by)] += value
        elif kind in ("timer", "untimer"):
            bucket = f"{clock.PREFIX}{clock.bucket_of(int(event), resolution)}"
            passed_on[bucket] += 1 if kind == "timer" else -1
        elif kind == "dead":
            letter = DeadLetter.of(
                reason,
                "counter",
                None,
                (topic, partition, offset),
                raw.encode() if raw is not None else None,
                key or None,
            )
            out += dead_letter_records(outputs.dlq, [letter], outputs.message_limit)
        elif kind not in ("new", "late"):
            value = event.encode()
            out.append((topics[kind], key, value))
            if enriches and kind in enriched:
                to_enrich.append(decided_event(kind, key, value, (topics[kind], -1, -1)))
    counts = {
        names.COUNTER_DLQ: kinds["dead"],
        names.COUNTER_FIRED: kinds["ready"],
        names.COUNTER_UPDATED: kinds["updated"],
        names.COUNTER_INCOMPLETE: kinds["incomplete"],
        names.COUNTER_DELETED: kinds["deleted"],
        names.COUNTER_KEYS: kinds["new"],
        names.COUNTER_FIRED_LATE: kinds["late"],
    } | dict(passed_on)
    return PartitionEvents(out, counts, to_enrich)
