"""Exactly-once Kafka output: one transaction per writer and micro-batch, with a batch-id marker.

Spark commits a micro-batch only after its foreachBatch handler returned, and
retries a failed task in a fresh process. Whatever wrote to Kafka before such
a crash is written again by the replay, so an ordinary producer would publish
twice. A :class:`TransactionalOutput` instead writes one writer's records of
a batch together with a **marker** in one Kafka transaction:

1. on first use it calls ``init_transactions`` with the writer's stable
   ``transactional.id``: whatever an earlier incarnation left open is aborted,
   and that incarnation is fenced off (a zombie can no longer commit);
2. it reads back the marker: the committed offset of the consumer group named
   like the transactional id, on partition 0 of the markers topic. Offset =
   last committed batch id + 1; its metadata = ``{query, batch, counts}``;
3. a batch at or below the marker was committed already: nothing is written,
   and the counts it committed are handed back so metrics count it once;
4. otherwise: begin, produce the records, ``send_offsets_to_transaction`` the
   new marker (plus any input offsets, see :mod:`fusion.spark.stage`), commit.

A marker is a consumer-group offset, so reading it is one lookup, not a scan
of a topic. Readers use ``isolation.level=read_committed`` and see each
batch's records once, whatever the crash point. The marker carries the
query id of the checkpoint, so a query started on a fresh checkpoint (batch
ids from 0 again) is not mistaken for a replay.

Writers are executor tasks (one transactional id per stage and input
partition: a retried task takes over from its failed attempt) and the driver
of each query (its own id: a second process running the same query fences the
first, which then fails with :class:`FencedError`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import KafkaException, TopicPartition
from tenacity import Retrying, retry_if_exception_type, stop_after_delay

from fusion.core import KafkaSettings, crash_point
from fusion.kafka import client as kafka_client
from fusion.kafka.errors import FencedError, TransactionError
from fusion.kafka.markers import Marker
from fusion.kafka.producer import produce
from fusion.kafka.retry import FENCED, REFUSED, Stuck, classify, retire, retry_kafka, watched

OutRecord = tuple[str, str | None, bytes | None]  # topic, key, value (None: a tombstone)
T = TypeVar("T")


class _TakeOver(Exception):
    """Fenced by the attempt this one replaces: start over under the same id, once."""


@dataclass(frozen=True)
class Published:
    """What :meth:`TransactionalOutput.publish` did: wrote the batch now, or found it committed."""

    marker: Marker
    written: bool


class TransactionalOutput:
    """One writer's exactly-once output (see the module docstring)."""

    def __init__(
        self,
        settings: KafkaSettings,
        transactional_id: str,
        markers_topic: str,
        budget_seconds: float,
        crash_prefix: str,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        """``crash_prefix``: this writer's crash points are ``<crash_prefix>.before_commit``, ..."""
        self.settings = settings
        self.transactional_id = transactional_id
        self.crash_prefix = crash_prefix
        self.markers_topic = markers_topic
        self.budget = budget_seconds
        self.on_retry = on_retry
        self.retries = 0
        self._producer: Any = None
        self._group_metadata: Any = None
        self._marker: Marker | None = None

    def committed(self, query: str, batch_id: int) -> Marker | None:
        """The marker, if ``batch_id`` of ``query`` was committed already (a replay); else None."""
        if self._producer is None:
            self._start()
        marker = self._marker
        if marker is not None and marker.query == query and batch_id <= marker.batch:
            return marker
        return None

    def last_marker(self) -> Marker | None:
        if self._producer is None:
            self._start()
        return self._marker

    def publish(
        self,
        query: str,
        batch_id: int,
        records: Iterable[OutRecord],
        counts: Mapping[str, int],
        offsets: Sequence[TopicPartition] = (),
        take_over: bool = True,
    ) -> Published:
        """Write ``records``, ``offsets`` and the marker of ``batch_id`` in one transaction.

        ``take_over``: when another process fenced this writer off, start again
        (fencing it in turn) and re-read the marker; a retried Spark task does
        this to the attempt it replaces. Without it, being fenced raises
        :class:`FencedError`: the driver of a query that another process runs too.
        """
        records = list(records)
        took_over = False

        def attempt() -> Published:
            nonlocal took_over
            done = self.committed(query, batch_id)
            if done is not None:
                return Published(done, written=False)
            marker = Marker(query, batch_id, dict(counts))
            try:
                self._transaction(records, marker, offsets)
            except Stuck as exc:
                # Drop the producer: the next one's init fences it; closed once its call is out.
                retire(self._producer, exc.call, self.budget)
                self._producer = None
                self._retried(f"Kafka transaction stuck, starting over: {exc}")
                raise
            except KafkaException as exc:
                error = exc.args[0]
                fenced = error.code() in FENCED
                self._abandon(error)
                if fenced and take_over and not took_over:
                    took_over = True
                    raise _TakeOver from None
                if fenced:
                    raise FencedError(self.transactional_id) from None
                if error.fatal() or error.code() in REFUSED:
                    # A missing ACL, a record too large: another attempt would meet the same.
                    raise classify(error, self.transactional_id, self.settings.bootstrap) from None
                raise TransactionError(self.transactional_id, str(error)) from None
            self._marker = marker
            crash_point(f"{self.crash_prefix}.after_commit")
            return Published(marker, written=True)

        # Start over, with a new producer, while Kafka is stuck (for the budget) or
        # once after taking the transactional id over; tenacity, like every retry.
        try:
            for again in Retrying(
                stop=stop_after_delay(self.budget),
                retry=retry_if_exception_type((Stuck, _TakeOver)),
                reraise=True,
            ):
                with again:
                    return attempt()
        except Stuck as exc:
            raise TransactionError(self.transactional_id, str(exc)) from None
        except _TakeOver:
            raise FencedError(self.transactional_id) from None
        raise AssertionError("unreachable: tenacity returns or raises")

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
            self._producer.close()  # its threads and sockets now, not at garbage collection
            self._producer = None

    def _transaction(
        self, records: list[OutRecord], marker: Marker, offsets: Sequence[TopicPartition]
    ) -> None:
        producer = self._producer
        producer.begin_transaction()
        for topic, key, value in records:
            produce(producer, topic, key, value)
        positions = [
            TopicPartition(self.markers_topic, 0, marker.batch + 1, metadata=marker.to_metadata()),
            *offsets,
        ]
        self._retrying(
            lambda: producer.send_offsets_to_transaction(
                positions, self._group_metadata, self.budget
            ),
            "send the batch marker",
        )
        crash_point(f"{self.crash_prefix}.before_commit")
        self._retrying(lambda: producer.commit_transaction(self.budget), "commit")

    def _retrying(self, call: Callable[[], T], what: str, client: Any = None) -> T:
        """``call`` through retriable errors; given up on if it hangs while ``client``
        (default: the producer) reaches Kafka (see :mod:`fusion.kafka.retry`)."""
        watcher = client if client is not None else self._producer
        return retry_kafka(
            lambda: watched(call, watcher, self.budget), self.budget, what, self._retried
        )

    def _retried(self, message: str) -> None:
        self.retries += 1
        if self.on_retry is not None:
            self.on_retry(message)

    def _abandon(self, error: Any) -> None:
        """After a failed transaction: abort it if Kafka asks to, else drop the producer."""
        if error.txn_requires_abort() and not error.fatal():
            try:
                self._producer.abort_transaction(self.budget)
                return
            except KafkaException:
                pass
        self._producer = None

    def _start(self) -> None:
        producer = kafka_client.producer(
            self.settings,
            {
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": int(self.budget * 1000),
                "queue.buffering.max.messages": 1_000_000,
                "linger.ms": 5,
            },
        )
        try:
            self._retrying(
                lambda: producer.init_transactions(self.budget), "init_transactions", producer
            )
        except (KafkaException, Stuck) as exc:
            raise TransactionError(self.transactional_id, f"init_transactions: {exc}") from None
        try:
            self._group_metadata, self._marker = self._read_marker()
        except (KafkaException, Stuck) as exc:
            raise TransactionError(
                self.transactional_id, f"reading its batch marker: {exc}"
            ) from None
        self._producer = producer

    def _read_marker(self) -> tuple[Any, Marker | None]:
        """This writer's group metadata and committed marker (read after init: nothing pending)."""
        consumer = kafka_client.consumer(self.settings, self.transactional_id)
        try:
            metadata = consumer.consumer_group_metadata()
            partition = TopicPartition(self.markers_topic, 0)
            (position,) = self._retrying(
                lambda: consumer.committed([partition], timeout=self.budget),
                "read the marker",
                consumer,
            )
        finally:
            consumer.close()
        if position.offset < 0:
            return metadata, None
        return metadata, Marker.from_metadata(position.metadata)
