"""Kafka's errors: transactions, fencing, publishing, refusals and missing markers.

Every class roots in :class:`fusion.core.errors.FusionError` and says its exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core import ExitCode, FusionError

if TYPE_CHECKING:
    pass


class TransactionError(FusionError):
    """Kafka did not commit a micro-batch's transaction."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, transactional_id: str, detail: str) -> None:
        self.transactional_id = transactional_id
        super().__init__(
            f"Kafka transaction of {transactional_id} failed: {detail}; "
            "the micro-batch fails and is replayed from its checkpoint"
        )


class FencedError(FusionError):
    """Another instance took over this query's transactional id."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        super().__init__(
            f"another process runs the same query (transactional.id {transactional_id}) "
            "and fenced this one off; run one instance per pipeline component"
        )


class PublishError(FusionError):
    """Kafka did not confirm one or more records."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, topic: str, failed: int, detail: str) -> None:
        self.topic = topic
        self.failed = failed
        super().__init__(
            f"Kafka did not confirm {failed} record(s) to {topic}: {detail}; "
            "the micro-batch fails and is replayed from its checkpoint"
        )


class KafkaAccessError(FusionError):
    """Kafka refused an operation to the configured principal (an ACL is missing)."""

    exit_code = ExitCode.CREDENTIALS

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        super().__init__(
            f"Kafka refused {what} ({detail}): grant the configured principal the ACL "
            "(topic write/read, group read, transactional id write), or check "
            "[kafka] sasl_username/sasl_password"
        )


class MessageTooLargeError(FusionError):
    """A topic refused a record as too large (its max.message.bytes is below Fusion's limit)."""

    exit_code = ExitCode.DEPLOYMENT

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        super().__init__(
            f"Kafka refused a record of {what} as too large ({detail}): raise the topic's "
            "max.message.bytes to what `fusion run` sets on the topics it creates, "
            "or lower [pipeline] max_record_bytes"
        )


class KafkaRefusedError(FusionError):
    """Kafka refused a request with an error no other class covers."""

    exit_code = ExitCode.KAFKA_REFUSED

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        super().__init__(
            f"Kafka refused {what}: {detail}; the error code names the cause "
            "(see Kafka's protocol error codes)"
        )


class MarkersGoneError(FusionError):
    """A batch waits to be replayed, but the markers that make its replay exactly-once are gone."""

    exit_code = ExitCode.DEPLOYMENT

    def __init__(self, query: str, batch: int) -> None:
        self.query = query
        self.batch = batch
        super().__init__(
            f"{query}: batch {batch} was started but never committed, and the query's batch "
            "markers are gone from Kafka (consumer-group offsets expire "
            "offsets.retention.minutes, 7 days by default, after their last commit), so "
            "replaying it could publish its output twice; to replay it anyway (duplicates "
            "possible) run once with `fusion run --replay-unmarked`, and raise "
            "offsets.retention.minutes above your longest stop"
        )
