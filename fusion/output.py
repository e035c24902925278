"""Exactly-once Kafka output of a micro-batch: one transaction per batch, with a batch-id marker.

Spark commits a micro-batch only after its foreachBatch handler returned. A
crash after the handler wrote to Kafka but before Spark's commit makes Spark
run the same batch id again, so an ordinary producer would write its records
twice. :class:`BatchOutput` instead writes a batch's records and a marker
``{query, batch_id}`` to the markers topic in **one Kafka transaction**:

- on start it calls ``init_transactions`` with a stable ``transactional.id``,
  which aborts whatever the previous incarnation left open and fences it off
  (a zombie can no longer commit), then reads back the last committed marker;
- a batch whose id is not above that marker was committed already: skipped;
- otherwise begin, produce the records and the new marker, commit.

Readers use ``isolation.level=read_committed`` and so see every batch's
records exactly once, whatever the crash point. The marker's key includes the
query id from the checkpoint, so a pipeline started on a fresh checkpoint
(batch ids from 0 again) is not mistaken for a replay.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from fusion import clients
from fusion.config import PipelineConfig
from fusion.errors import FusionError
from fusion.events import dumps
from fusion.faults import crash_point
from fusion.metrics import Metrics
from fusion.publisher import produce

OutRecord = tuple[str, str | None, bytes]  # topic, key, value
KAFKA_ALERT = "kafka"


class TransactionError(FusionError):
    """Kafka did not commit a micro-batch's transaction."""

    def __init__(self, transactional_id: str, detail: str) -> None:
        self.transactional_id = transactional_id
        super().__init__(
            f"Kafka transaction of {transactional_id} failed: {detail}; "
            "the micro-batch fails and is replayed from its checkpoint"
        )


class FencedError(FusionError):
    """Another instance took over this query's transactional id."""

    def __init__(self, transactional_id: str) -> None:
        super().__init__(
            f"another process runs the same query (transactional.id {transactional_id}) "
            "and fenced this one off; run one instance per pipeline component"
        )


def checkpoint_query_id(checkpoint: Path) -> str:
    """The query id Spark wrote to ``<checkpoint>/metadata`` when the query first started."""
    text = (checkpoint / "metadata").read_text().splitlines()[0]
    return str(json.loads(text)["id"])


class BatchOutput:
    """Writes each micro-batch's records exactly once (see the module docstring)."""

    def __init__(self, config: PipelineConfig, stage: str, metrics: Metrics) -> None:
        """Output of ``stage``, whose checkpoint is ``<checkpoint_dir>/<stage>``."""
        self.stage = stage
        self.settings = config.kafka
        self.transactional_id = f"fusion-{config.name}-{stage}"
        self.markers_topic = config.markers_topic
        self.checkpoint = config.checkpoint_dir / stage
        self.metrics = metrics
        self.budget = config.pipeline.retry_budget_seconds
        self._producer: Any = None
        self._marker_key = ""
        self.committed = -1

    def publish(self, batch_id: int, records: Iterable[OutRecord]) -> bool:
        """Write ``records`` and the marker of ``batch_id`` atomically; False if already written.

        A batch with nothing to write needs no transaction: its replay writes nothing either.
        """
        records = list(records)
        if not records:
            return True
        if self._producer is None:
            self._start()
        if batch_id <= self.committed:
            self.metrics.add("output.replays_skipped")
            return False
        try:
            self._producer.begin_transaction()
            for topic, key, value in records:
                produce(self._producer, topic, key, value)
            marker = {"query": self._marker_key, "batch_id": batch_id}
            produce(self._producer, self.markers_topic, self._marker_key, dumps(marker))
            crash_point(f"{self.stage}.before_commit")
            self._commit()
        except KafkaException as exc:
            self._fail(exc.args[0])
        self.committed = batch_id
        crash_point(f"{self.stage}.after_commit")
        return True

    def _start(self) -> None:
        producer = clients.kafka_producer(
            self.settings,
            {
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": int(self.budget * 1000),
                "queue.buffering.max.messages": 1_000_000,
                "linger.ms": 20,
            },
        )
        try:
            producer.init_transactions(self.budget)
        except KafkaException as exc:
            raise TransactionError(
                self.transactional_id, f"init_transactions: {exc.args[0]}"
            ) from None
        self._producer = producer
        self._marker_key = f"{self.transactional_id}/{checkpoint_query_id(self.checkpoint)}"
        self.committed = self._read_marker()

    def _read_marker(self) -> int:
        """The last committed batch id of this query, -1 if none (read_committed, to the end)."""
        consumer = clients.kafka_consumer(
            self.settings, f"{self.transactional_id}-markers", {"enable.partition.eof": True}
        )
        try:
            metadata = consumer.list_topics(self.markers_topic, timeout=30)
            partitions = list(metadata.topics[self.markers_topic].partitions)
            consumer.assign([TopicPartition(self.markers_topic, p, 0) for p in partitions])
            at_end: set[int] = set()
            last = -1
            deadline = time.monotonic() + self.budget
            while len(at_end) < len(partitions):
                if time.monotonic() > deadline:
                    raise TransactionError(
                        self.transactional_id, f"{self.markers_topic} unreadable"
                    )
                message = consumer.poll(1.0)
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        at_end.add(message.partition() or 0)
                        continue
                    raise TransactionError(self.transactional_id, str(error))
                if (message.key() or b"").decode() == self._marker_key:
                    last = int(json.loads(message.value() or b"{}")["batch_id"])
            return last
        finally:
            consumer.close()

    def _commit(self) -> None:
        deadline = time.monotonic() + self.budget
        while True:
            try:
                self._producer.commit_transaction(self.budget)
                self.metrics.clear_alert(KAFKA_ALERT)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if not error.retriable() or time.monotonic() > deadline:
                    raise
                self.metrics.alert(KAFKA_ALERT, f"Kafka unavailable, retrying commit: {error}")

    def _fail(self, error: Any) -> None:
        if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED):
            self._producer = None
            raise FencedError(self.transactional_id)
        if error.txn_requires_abort():
            self._producer.abort_transaction(self.budget)
        else:
            # A fatal producer error: start over with a fresh producer on the next batch.
            self._producer = None
        raise TransactionError(self.transactional_id, str(error))
