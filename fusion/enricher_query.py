"""The enricher query: ready events in, one enriched document per key out.

It reads the ready topic, the updates topic (``on_update = "reenrich"``: a
fired key changed, rewrite its document) and, with ``on_timeout = "partial"``,
the incomplete topic (write a ``"complete": false`` document). Per micro-batch:

1. parse the events (malformed ones become dead letters) and keep one per key;
2. fetch the keys' source documents from Elasticsearch (:mod:`fusion.lookups`:
   one ``_mget`` per chunk in ``batched`` mode, N GETs per key in ``per-source``);
3. build each enriched document (:func:`fusion.enricher.build_enriched`); a key
   whose documents are no longer all in Elasticsearch becomes a dead letter;
4. bulk-write the enriched documents: ``_id`` = key, external version = the sum
   of the source versions, so a replay rewrites the same document and an
   enrichment from older source documents never overwrites a newer one;
5. publish them to the enriched topic and the dead letters to the DLQ in one
   Kafka transaction (:mod:`fusion.output`): exactly once per batch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fusion import lookups
from fusion.bulk import Target, write_documents
from fusion.config import PipelineConfig
from fusion.enricher import build_enriched, enriched_version, missing_sources
from fusion.events import DeadLetter, IncompleteEvent, ReadyEvent, now_iso, now_utc
from fusion.faults import crash_point
from fusion.metrics import Metrics
from fusion.spark_io import BatchStage, read_kafka, start_foreach_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


@dataclass(frozen=True)
class EnrichedDoc:
    """An enriched document to write, and the ready record it answers."""

    key: str
    doc: dict[str, Any]
    where: tuple[str, int, int]
    original: bytes
    version: int | None = None


class EnrichBatch(BatchStage):
    """The foreachBatch handler of the enricher (runs in the driver; `fusion reconcile` too)."""

    def __init__(self, config: PipelineConfig, metrics: Metrics, stage: str = "enricher") -> None:
        super().__init__(config, metrics, stage)
        self.target = Target(
            config.enriched_index, "enricher", None, config.pipeline.bulk_chunk, False
        )

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("value", "topic", "partition", "offset").collect()
        if not rows:
            return
        self.handle(batch_id, [(r.value, (r.topic, r.partition, r.offset)) for r in rows])

    def handle(
        self, batch_id: int, records: list[tuple[bytes | None, tuple[str, int, int]]]
    ) -> None:
        wanted: dict[str, Wanted] = {}
        dead: list[DeadLetter] = []
        for value, where in records:
            parsed = self._parse(value, where)
            if isinstance(parsed, DeadLetter):
                dead.append(parsed)
            elif parsed.key not in wanted or wanted[parsed.key].partial:
                # A complete enrichment supersedes a partial one of the same key.
                wanted[parsed.key] = parsed
        found = lookups.fetch(self.es, self.config, list(wanted), self.metrics, self.retry)
        crash_point("enricher.after_lookup")
        enriched: list[EnrichedDoc] = []
        enriched_at = now_iso()
        required = self.config.required_sources
        for key, want in wanted.items():
            docs = found[key]
            self.metrics.add("enricher.docs_fetched", len(docs))
            missing = missing_sources(docs, required)
            if (missing and not want.partial) or not docs:
                gone = missing or list(self.config.source_names)
                reason = f"{want.kind}, but Elasticsearch no longer has source(s) {gone} for key"
                dead.append(DeadLetter.of(reason, "enricher", None, want.where, want.original, key))
                continue
            doc = build_enriched(
                self.config.key_field, key, docs, want.fired_at, enriched_at, missing
            )
            version = enriched_version(docs)
            enriched.append(EnrichedDoc(key, doc, want.where, want.original, version))

        written = write_documents(self.es, self.target, enriched, self.retry, self.metrics)
        crash_point("enricher.after_write")
        dead.extend(written.dead)
        out = self.enriched_records(written.confirmed) + self.dlq_records(dead)
        if not self.output.publish(batch_id, out):
            return
        kinds = Counter(wanted[item.record.key].kind for item in written.confirmed)
        self.metrics.add("enricher.ready", len(wanted))
        self.metrics.add("enricher.batches", 1 if wanted else 0)
        self.metrics.add("enricher.enriched", len(written.confirmed))
        self.metrics.add("enricher.updated", kinds["updated"])
        self.metrics.add("enricher.partial", kinds["incomplete"])
        self.metrics.add("enricher.stale", len(written.stale))
        self.metrics.add("enricher.dlq", len(dead))
        done = now_utc()
        for item in written.confirmed:
            fired = datetime.fromisoformat(item.record.doc["fusion"]["fired_at"])
            self.metrics.observe_latency((done - fired).total_seconds())

    def _parse(self, value: bytes | None, where: tuple[str, int, int]) -> Wanted | DeadLetter:
        partial = where[0] == self.config.incomplete_topic
        model: type[ReadyEvent | IncompleteEvent] = IncompleteEvent if partial else ReadyEvent
        try:
            event = model.model_validate_json(value or b"")
        except ValidationError as exc:
            what = "incomplete" if partial else "ready"
            reason = f"malformed {what} event: {exc.errors()[0]['msg']}"
            return DeadLetter.of(reason, "enricher", None, where, value)
        if isinstance(event, IncompleteEvent):
            return Wanted(event.key, "incomplete", event.expired_at, where, value or b"")
        return Wanted(event.key, event.kind, event.fired_at, where, value or b"")


@dataclass(frozen=True)
class Wanted:
    """A key to enrich, and the event that asked for it."""

    key: str
    kind: str  # ready, updated, or incomplete (a partial document)
    fired_at: str
    where: tuple[str, int, int]
    original: bytes

    @property
    def partial(self) -> bool:
        return self.kind == "incomplete"


def input_topics(config: PipelineConfig) -> list[str]:
    """Ready events; updates unless ignored; incomplete keys if they get partial documents."""
    topics = [config.ready_topic]
    if config.pipeline.on_update == "reenrich":
        topics.append(config.updates_topic)
    if config.pipeline.on_timeout == "partial":
        topics.append(config.incomplete_topic)
    return topics


def start_enricher(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    stream = read_kafka(spark, config, *input_topics(config))
    return start_foreach_batch(stream, EnrichBatch(config, metrics))
