"""The indexer query: one Structured Streaming query per source topic.

Per micro-batch, in this order:

1. parse each record; malformed ones (not JSON, not an object, no key, a bad
   key, too large) become dead letters;
2. keep the latest record per key (``_id`` = join key, so the last write wins anyway);
3. bulk-write to the source index with ``refresh=wait_for``, ``_id`` = key and
   the Kafka offset as external version; retry 429/5xx/outages with backoff;
   rejected documents become dead letters;
4. only now, in one Kafka transaction (:mod:`fusion.output`), publish the dead
   letters and one ack per confirmed, searchable document.

Any exception or crash fails the micro-batch; Spark then replays it from the
checkpoint. The replay rewrites the same ``_id`` with the same version (or
finds a newer one there) and sends the acks then; a batch whose transaction
committed already is not published twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from acks.contract import Ack
from acks.kafka import ack_records
from fusion.bulk import Confirmed, Target, write_documents
from fusion.config import PipelineConfig, SourceConfig
from fusion.events import DeadLetter, now_utc
from fusion.faults import crash_point
from fusion.metrics import Metrics
from fusion.spark_io import BatchStage, read_kafka, start_foreach_batch
from indexers.records import RawRecord, SourceRecord, content_digest, latest_per_key, parse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class IndexBatch(BatchStage):
    """The foreachBatch handler of one source's indexer (runs in the driver)."""

    def __init__(self, config: PipelineConfig, source: SourceConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, f"indexer-{source.name}")
        self.source = source
        self.target = Target(
            config.index_of(source), "indexer", source.name, config.pipeline.bulk_chunk
        )
        self.prefix = f"indexer.{source.name}"

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("value", "topic", "partition", "offset").collect()
        if not rows:
            return
        self.handle(batch_id, [RawRecord(r.value, r.topic, r.partition, r.offset) for r in rows])

    def handle(self, batch_id: int, raws: Iterable[RawRecord]) -> None:
        records: list[SourceRecord] = []
        dead: list[DeadLetter] = []
        for raw in raws:
            parsed = parse(
                raw, self.source.name, self.config.key_field, self.config.max_record_bytes
            )
            if isinstance(parsed, SourceRecord):
                records.append(parsed)
            else:
                dead.append(parsed)
        received = len(records) + len(dead)
        crash_point("indexer.before_bulk")
        written = write_documents(
            self.es, self.target, latest_per_key(records), self.retry, self.metrics
        )
        crash_point("indexer.after_bulk")
        dead.extend(written.dead)
        out = self.dlq_records(dead)
        out += ack_records(self.config.acks_topic, self._acks(written.confirmed))
        if not self.output.publish(batch_id, out):
            return
        self.metrics.add(f"{self.prefix}.records", received)
        self.metrics.add(f"{self.prefix}.dlq", len(dead))
        self.metrics.add(f"{self.prefix}.indexed", len(written.confirmed))
        self.metrics.add(f"{self.prefix}.stale", len(written.stale))
        self.metrics.add(f"{self.prefix}.bulk_requests", written.requests)
        self.metrics.add(f"{self.prefix}.acks", len(written.confirmed))

    def _acks(self, confirmed: list[Confirmed]) -> Iterable[Ack]:
        acked_at = now_utc()
        for item in confirmed:
            topic, partition, offset = item.record.where
            yield Ack(
                key=item.record.key,
                source=self.source.name,
                index=item.index,
                doc_id=item.record.key,
                seq_no=item.seq_no,
                primary_term=item.primary_term,
                version=item.version,
                topic=topic,
                partition=partition,
                offset=offset,
                acked_at=acked_at,
                digest=content_digest(item.record.doc),
            )


def start_indexer(
    spark: SparkSession, config: PipelineConfig, source: SourceConfig, metrics: Metrics
) -> StreamingQuery:
    """Start the indexer of ``source``, checkpointed under ``<checkpoint_dir>/indexer-<name>``."""
    stream = read_kafka(spark, config, config.topic_of(source))
    return start_foreach_batch(stream, IndexBatch(config, source, metrics))
