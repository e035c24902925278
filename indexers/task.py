"""The indexer's executor task: one Kafka partition's records of a micro-batch, in this order:

1. if this partition's output of the batch was committed already (Spark
   replays a batch after a crash), stop: nothing is written twice;
2. parse each record; malformed ones (not JSON, not an object, no key, a bad
   key, too large) become dead letters;
3. keep the latest record per key (``_id`` = join key, so the last write wins anyway);
4. bulk-write to the source index with ``refresh=wait_for``, ``_id`` = key and
   the Kafka offset + 1 as external version; retry 429/5xx/outages with backoff;
   rejected documents become dead letters;
5. only now, in one Kafka transaction (:mod:`fusion.runtime.exactly_once`), publish the dead
   letters and one ack per confirmed, searchable document.

A crash anywhere fails the task; Spark retries it (or replays the batch),
which rewrites the same ``_id`` with the same version (or finds a newer one
there) and then sends the acks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from acks.contract import Ack
from acks.kafka import ack_records
from fusion.core.events import dead_letter_records, now_utc
from fusion.runtime.bulk import Confirmed, Target, write_documents
from fusion.runtime.faults import crash_point
from fusion.runtime.metrics import Metrics
from fusion.runtime.retry import RetryPolicy
from fusion.runtime.tasks import Counts, Job, column
from indexers.records import RawRecord, SourceRecord, content_digest, latest_per_key, parse

if TYPE_CHECKING:
    import pyarrow as pa


class IndexPartition:
    """The task function of one source's indexer (picklable: it travels to the executors)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, job: Job, rows: pa.Table) -> Counts:
        raws = [
            RawRecord(*fields)
            for fields in zip(
                column(rows, "value"),
                column(rows, "topic"),
                column(rows, "partition"),
                column(rows, "offset"),
                strict=True,
            )
        ]
        return index_records(job, self.source, raws)


def index_records(job: Job, source: str, raws: list[RawRecord]) -> Counts:
    """Steps 1-5 of the module docstring for one Kafka partition's ``raws``; the task's counts."""
    config = job.config
    output = job.output(f"{raws[0].topic}-{raws[0].partition}")
    done = output.committed(job.query, job.batch_id)
    if done is not None:
        return {**done.counts, "tasks.replayed": 1}
    records: list[SourceRecord] = []
    dead = []
    for raw in raws:
        parsed = parse(raw, source, config.key_field, config.max_record_bytes)
        if isinstance(parsed, SourceRecord):
            records.append(parsed)
        else:
            dead.append(parsed)
    crash_point("indexer.before_bulk")
    target = Target(
        config.index_of(config.source(source)), "indexer", source, config.pipeline.bulk_chunk
    )
    retries = Metrics()
    written = write_documents(
        job.elasticsearch(),
        target,
        latest_per_key(records),
        RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds),
        retries,
    )
    crash_point("indexer.after_bulk")
    dead.extend(written.dead)
    out = dead_letter_records(config.dlq_topic, dead)
    out += ack_records(config.acks_topic, _acks(source, written.confirmed))
    prefix = f"indexer.{source}"
    counts = {
        f"{prefix}.records": len(raws),
        f"{prefix}.dlq": len(dead),
        f"{prefix}.indexed": len(written.confirmed),
        f"{prefix}.stale": len(written.stale),
        f"{prefix}.bulk_requests": written.requests,
        f"{prefix}.acks": len(written.confirmed),
        "es.retries": retries.get("es.retries"),
    }
    published = output.publish(job.query, job.batch_id, out, counts)
    return {**published.marker.counts, "tasks.replayed": int(not published.written)}


def _acks(source: str, confirmed: list[Confirmed]) -> Iterable[Ack]:
    acked_at = now_utc()
    for item in confirmed:
        topic, partition, offset = item.record.where
        yield Ack(
            key=item.record.key,
            source=source,
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
