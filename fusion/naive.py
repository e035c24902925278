"""Naive mode: the design the counter replaces, kept so the benchmark can measure it.

One query reads every source topic. Each record is indexed, then the other
N-1 indexes are queried for its key, one request each; when all N documents
are found the key is enriched. A key therefore costs N·(N-1) lookups, of
which (N-1)² return partial data and are wasted.

To keep "after indexing it" exact within a micro-batch, the records of the
batch are processed in rounds: round j holds the j-th record of each key in
arrival order, so a key's records are indexed and looked up one after the
other, as if they had arrived in separate batches.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elasticsearch import NotFoundError

from fusion.bulk import Confirmed, Target, write_documents
from fusion.config import PipelineConfig, SourceConfig
from fusion.enricher import FoundDoc, build_enriched, enriched_version
from fusion.enricher_query import EnrichedDoc
from fusion.events import DeadLetter, now_iso
from fusion.metrics import Metrics
from fusion.spark_io import BatchStage, read_kafka, start_foreach_batch
from indexers.records import RawRecord, SourceRecord, parse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

LOOKUP_THREADS = 8


@dataclass(frozen=True)
class Arrival:
    source: SourceConfig
    record: SourceRecord


class NaiveBatch(BatchStage):
    """foreachBatch handler of naive mode (runs in the driver)."""

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, "naive")
        self.by_topic = {config.topic_of(s): s for s in config.sources}
        self.pool = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="naive-lookup")

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = (
            batch.select("value", "topic", "partition", "offset", "timestamp")
            .orderBy("timestamp", "topic", "partition", "offset")
            .collect()
        )
        self.handle(batch_id, [RawRecord(r.value, r.topic, r.partition, r.offset) for r in rows])

    def handle(self, batch_id: int, raws: list[RawRecord]) -> None:
        rounds: list[list[Arrival]] = []
        seen: dict[str, int] = defaultdict(int)
        dead: list[DeadLetter] = []
        for raw in raws:
            source = self.by_topic[raw.topic]
            parsed = parse(raw, source.name, self.config.key_field, self.config.max_record_bytes)
            if isinstance(parsed, DeadLetter):
                dead.append(parsed)
                continue
            turn = seen[parsed.key]
            seen[parsed.key] += 1
            if turn == len(rounds):
                rounds.append([])
            rounds[turn].append(Arrival(source, parsed))
        enriched: list[EnrichedDoc] = []
        for arrivals in rounds:
            confirmed, rejected = self._index(arrivals)
            dead.extend(rejected)
            enriched.extend(self._match(confirmed))
        written = write_documents(
            self.es,
            Target(
                self.config.enriched_index, "enricher", None, self.config.pipeline.bulk_chunk, False
            ),
            enriched,
            self.retry,
            self.metrics,
        )
        out = self.enriched_records(written.confirmed) + self.dlq_records(dead + written.dead)
        if not self.output.publish(batch_id, out):
            return
        self.metrics.add("enricher.enriched", len(written.confirmed))
        self.metrics.add("naive.dlq", len(dead) + len(written.dead))

    def _index(
        self, arrivals: list[Arrival]
    ) -> tuple[list[tuple[SourceConfig, Confirmed]], list[DeadLetter]]:
        by_source: dict[str, list[SourceRecord]] = defaultdict(list)
        for arrival in arrivals:
            by_source[arrival.source.name].append(arrival.record)
        confirmed: list[tuple[SourceConfig, Confirmed]] = []
        dead: list[DeadLetter] = []
        for name, records in by_source.items():
            source = self.config.source(name)
            target = Target(
                self.config.index_of(source), "indexer", name, self.config.pipeline.bulk_chunk
            )
            result = write_documents(self.es, target, records, self.retry, self.metrics)
            confirmed.extend((source, item) for item in result.confirmed)
            dead.extend(result.dead)
            self.metrics.add(f"indexer.{name}.indexed", len(result.confirmed))
        return confirmed, dead

    def _match(self, confirmed: list[tuple[SourceConfig, Confirmed]]) -> list[EnrichedDoc]:
        """Query the other N-1 indexes for every confirmed record; enrich complete keys."""
        lookups = [
            (source, item, other)
            for source, item in confirmed
            for other in self.config.sources
            if other.name != source.name
        ]
        hits = list(self.pool.map(lambda job: self._get(job[2], job[1].record.key), lookups))
        found: dict[int, dict[str, FoundDoc]] = defaultdict(dict)
        for (_, item, other), hit in zip(lookups, hits, strict=True):
            if hit is not None:
                found[id(item)][other.name] = hit
        others = len(self.config.sources) - 1
        self.metrics.add("naive.es_requests", len(lookups))
        self.metrics.add("enricher.es_requests", len(lookups))
        enriched = []
        now = now_iso()
        for source, item in confirmed:
            docs = found[id(item)]
            self.metrics.add("enricher.docs_fetched", len(docs))
            if len(docs) < others:
                self.metrics.add("naive.wasted", others)
                continue
            record = item.record
            docs[source.name] = FoundDoc(record.doc, item.version)
            doc = build_enriched(self.config.key_field, record.key, docs, now, now_iso())
            enriched.append(
                EnrichedDoc(record.key, doc, record.where, record.original, enriched_version(docs))
            )
        return enriched

    def _get(self, source: SourceConfig, key: str) -> FoundDoc | None:
        try:
            hit = self.es.get(index=self.config.index_of(source), id=key)
        except NotFoundError:
            return None
        return FoundDoc(hit["_source"], hit["_version"])


def start_naive(spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> StreamingQuery:
    topics = ",".join(config.topic_of(s) for s in config.sources)
    stream = read_kafka(spark, config, topics)
    return start_foreach_batch(stream, NaiveBatch(config, metrics))
