"""The enricher query: ready events in, one enriched document per key out.

Per micro-batch:

1. parse the ready events (malformed ones become dead letters) and keep one per key;
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

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fusion import lookups
from fusion.bulk import Target, write_documents
from fusion.config import PipelineConfig
from fusion.enricher import build_enriched, enriched_version, missing_sources
from fusion.events import DeadLetter, ReadyEvent, now_iso, now_utc
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
    """The foreachBatch handler of the enricher (runs in the driver)."""

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, "enricher")
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
        ready: dict[str, tuple[ReadyEvent, tuple[str, int, int], bytes]] = {}
        dead: list[DeadLetter] = []
        for value, where in records:
            try:
                event = ReadyEvent.model_validate_json(value or b"")
            except ValidationError as exc:
                reason = f"malformed ready event: {exc.errors()[0]['msg']}"
                dead.append(DeadLetter.of(reason, "enricher", None, where, value))
                continue
            ready.setdefault(event.key, (event, where, value or b""))
        found = lookups.fetch(self.es, self.config, list(ready), self.metrics, self.retry)
        crash_point("enricher.after_lookup")
        enriched: list[EnrichedDoc] = []
        enriched_at = now_iso()
        for key, (event, where, original) in ready.items():
            docs = found[key]
            self.metrics.add("enricher.docs_fetched", len(docs))
            missing = missing_sources(docs, self.config.source_names)
            if missing:
                reason = f"ready, but Elasticsearch no longer has source(s) {missing} for key"
                dead.append(DeadLetter.of(reason, "enricher", None, where, original, key))
                continue
            doc = build_enriched(self.config.key_field, key, docs, event.fired_at, enriched_at)
            enriched.append(EnrichedDoc(key, doc, where, original, enriched_version(docs)))

        written = write_documents(self.es, self.target, enriched, self.retry, self.metrics)
        crash_point("enricher.after_write")
        dead.extend(written.dead)
        out = self.enriched_records(written.confirmed) + self.dlq_records(dead)
        if not self.output.publish(batch_id, out):
            return
        self.metrics.add("enricher.ready", len(ready))
        self.metrics.add("enricher.batches", 1 if ready else 0)
        self.metrics.add("enricher.enriched", len(written.confirmed))
        self.metrics.add("enricher.stale", len(written.stale))
        self.metrics.add("enricher.dlq", len(dead))
        done = now_utc()
        for item in written.confirmed:
            fired = datetime.fromisoformat(item.record.doc["fusion"]["fired_at"])
            self.metrics.observe_latency((done - fired).total_seconds())


def start_enricher(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    stream = read_kafka(spark, config, config.ready_topic)
    return start_foreach_batch(stream, EnrichBatch(config, metrics))
