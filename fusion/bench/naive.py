"""Naive mode: the design the counter replaces, kept so the benchmark can measure it.

One query reads every source topic. Each record is indexed, then the other
N-1 indexes are queried for its key, one request each; when all N documents
are found the key is enriched. A key therefore costs N·(N-1) lookups, of
which (N-1)² return partial data and are wasted.

To keep "after indexing it" exact within a micro-batch, the records of the
batch are processed in rounds: round j holds the j-th record of each key in
arrival order, so a key's records are indexed and looked up one after the
other, as if they had arrived in separate batches. The whole micro-batch is one
executor task for the same reason: naive matching is sequential by design.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elasticsearch import Elasticsearch, NotFoundError

from fusion.core import DeadLetter, PipelineConfig, SourceConfig, dead_letter_records, now_iso
from fusion.elastic import Confirmed, RetryPolicy, Target, write_documents
from fusion.enricher import (
    EnrichedDoc,
    FoundDoc,
    enrich_spec,
    enriched_json,
    enriched_records,
    enriched_version,
)
from fusion.kafka import OutRecord
from fusion.observe import Metrics, names
from fusion.pipeline import STARTERS
from fusion.spark import (
    KAFKA_SELECT,
    BatchStage,
    Job,
    TaskOutput,
    Work,
    column,
    elasticsearch,
    read_kafka,
    start_foreach_batch,
)
from fusion.topology import Query
from indexers import RawRecord, SourceRecord, parse

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

LOOKUP_THREADS = 8
# Its own counts, beside the enricher's it adds to as well (lookups, documents fetched).
BULK_REQUESTS = "naive.bulk_requests"
ES_REQUESTS = "naive.es_requests"
WASTED = "naive.wasted"  # lookups that found a source missing: what the counter saves
DLQ = "naive.dlq"


@dataclass(frozen=True)
class Arrival:
    source: SourceConfig
    record: SourceRecord


class NaiveBatch(BatchStage):
    """The driver side of naive mode: one task takes the whole micro-batch, in arrival order."""

    def __init__(self, config: PipelineConfig, metrics: Metrics) -> None:
        super().__init__(config, metrics, "naive", "naive")

    def work(self) -> Work:
        return NaivePartition(self.config)

    def columns(self, batch: DataFrame) -> DataFrame:
        # One task: naive matching is sequential by design (see the module docstring).
        return batch.selectExpr(*KAFKA_SELECT, "timestamp").coalesce(1)


@dataclass(frozen=True)
class NaivePartition:
    """Task function: index each record, then look its key up in the other N-1 indexes.

    The baseline takes the pipeline's whole configuration: it is the design
    Fusion is measured against, not a part of it.
    """

    config: PipelineConfig

    def __call__(self, job: Job, rows: pa.Table) -> TaskOutput:
        names = ("value", "topic", "partition", "offset", "timestamp")
        arrived = sorted(
            zip(*(column(rows, name) for name in names), strict=True),
            key=lambda r: (r[4], r[1], r[2], r[3]),
        )
        matcher = NaiveMatcher(self.config, elasticsearch(self.config.elasticsearch))
        out = matcher.handle([RawRecord(v, t, p, o) for v, t, p, o, _ in arrived])
        return TaskOutput("all", out, matcher.metrics.counts())


class NaiveMatcher:
    """Naive matching over one micro-batch's records, in per-key rounds."""

    def __init__(self, config: PipelineConfig, es: Elasticsearch) -> None:
        self.config = config
        self.enriched = enrich_spec(config)  # where its enriched documents go
        self.es = es
        self.metrics = Metrics()
        self.retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
        self.by_topic = {config.topic_of(s): s for s in config.sources}
        self.pool = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="naive-lookup")

    def handle(self, raws: list[RawRecord]) -> list[OutRecord]:
        rounds: list[list[Arrival]] = []
        seen: dict[str, int] = defaultdict(int)
        dead: list[DeadLetter] = []
        for raw in raws:
            source = self.by_topic[raw.topic]
            parsed = parse(
                raw, source.name, self.config.key_of(source), self.config.max_record_bytes
            )
            if isinstance(parsed, DeadLetter):
                dead.append(parsed)
                continue
            # The benchmark's baseline reads plain JSON sources only.
            assert isinstance(parsed, SourceRecord), "the naive baseline reads JSON sources"
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
        target = Target(
            self.config.enriched_index, "enricher", None, self.config.pipeline.bulk_chunk, False
        )
        written = write_documents(self.es, target, enriched, self.retry, self.metrics)
        self.metrics.add(names.ENRICHER_ENRICHED, len(written.confirmed))
        self.metrics.add(BULK_REQUESTS, written.requests)
        self.pool.shutdown()
        records, too_large = enriched_records(self.enriched, written.confirmed)
        dead = dead + written.dead + too_large
        self.metrics.add(DLQ, len(dead))
        return records + dead_letter_records(self.config.dlq_topic, dead, self.config.message_limit)

    def _index(
        self, arrivals: list[Arrival]
    ) -> tuple[list[tuple[SourceConfig, Confirmed[SourceRecord]]], list[DeadLetter]]:
        by_source: dict[str, list[SourceRecord]] = defaultdict(list)
        for arrival in arrivals:
            by_source[arrival.source.name].append(arrival.record)
        confirmed: list[tuple[SourceConfig, Confirmed[SourceRecord]]] = []
        dead: list[DeadLetter] = []
        for name, records in by_source.items():
            source = self.config.source(name)
            target = Target(
                self.config.index_of(source), "indexer", name, self.config.pipeline.bulk_chunk
            )
            result = write_documents(self.es, target, records, self.retry, self.metrics)
            confirmed.extend((source, item) for item in result.confirmed)
            dead.extend(result.dead)
            self.metrics.add(names.source_count(name, names.SOURCE_INDEXED), len(result.confirmed))
            self.metrics.add(BULK_REQUESTS, result.requests)
        return confirmed, dead

    def _match(
        self, confirmed: list[tuple[SourceConfig, Confirmed[SourceRecord]]]
    ) -> list[EnrichedDoc]:
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
        self.metrics.add(ES_REQUESTS, len(lookups))
        self.metrics.add(names.ENRICHER_ES_REQUESTS, len(lookups))
        enriched = []
        now = now_iso()
        for source, item in confirmed:
            docs = found[id(item)]
            self.metrics.add(names.ENRICHER_DOCS_FETCHED, len(docs))
            if len(docs) < others:
                self.metrics.add(WASTED, others)
                continue
            record = item.record
            docs[source.name] = FoundDoc(record.doc, item.version)
            body = enriched_json(self.config.key_field, record.key, docs, now, now_iso())
            version = enriched_version(docs)
            enriched.append(
                EnrichedDoc(record.key, body, now, record.where, record.original, version)
            )
        return enriched

    def _get(self, source: SourceConfig, key: str) -> FoundDoc | None:
        try:
            hit = self.es.get(index=self.config.index_of(source), id=key)
        except NotFoundError:
            return None
        return FoundDoc(hit["_source"], hit["_version"])


KIND = NAME = "naive"


def query(config: PipelineConfig) -> Query:
    """What ``fusion run --only naive`` runs: a query of its own over the source topics."""
    topics = tuple(config.topic_of(s) for s in config.sources)
    return Query(KIND, NAME, topics, (NAME,), tuple(config.source_names))


def start_naive(
    spark: SparkSession, config: PipelineConfig, query: Query, metrics: Metrics
) -> StreamingQuery:
    stream = read_kafka(spark, config, ",".join(query.reads))
    return start_foreach_batch(stream, NaiveBatch(config, metrics))


# How `fusion run --only naive` starts its query: the pipeline's own kinds, and this one.
NAIVE_STARTERS = {**STARTERS, KIND: start_naive}
# Its tasks run this module, which the executors' zip of the runtime leaves out.
SHIPS = ("fusion.bench",)
