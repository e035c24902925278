"""The shared runtime's errors: Kafka output, Elasticsearch writes and retries, topics, queries.

Every class roots in :class:`fusion.core.errors.FusionError` and says its exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core.errors import ExitCode, FusionError

if TYPE_CHECKING:
    from fusion.runtime.retry import RetryPolicy


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


class QueryFailedError(FusionError):
    """A streaming query stopped with an error.

    ``cause``: the exit code of the Fusion error a task stopped it with (an
    index that is gone, Kafka refusing access), which the command ends with.
    """

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, query: str, detail: str, cause: ExitCode | None = None) -> None:
        self.query = query
        self.detail = detail
        self.cause = cause
        super().__init__(
            f"query {query} failed: {detail}; fix the cause and run again, "
            "it resumes from its checkpoint"
        )

    def code(self) -> ExitCode:
        return self.cause if self.cause is not None else self.exit_code


class IndexingError(FusionError):
    """Some documents of a bulk write were still refused when the retry budget ran out."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, index: str, pending: int, detail: str) -> None:
        self.index = index
        self.pending = pending
        super().__init__(
            f"{pending} document(s) for {index} still failing after all retries ({detail})"
        )


class RetryBudgetExceeded(FusionError):
    """Elasticsearch kept failing transiently until the retry budget ran out."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, what: str, detail: str, policy: RetryPolicy) -> None:
        self.what = what
        self.detail = detail
        super().__init__(
            f"{what} still failing after {policy.budget_seconds:.0f} s of retries ({detail})"
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


class TopologyError(FusionError):
    """A topic or index could not be created, or set up as the pipeline needs it."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        super().__init__(f"could not set up {what}: {detail}")


class StageError(FusionError):
    """A stage's micro-batch failed in its tasks; the message is the first cause worth reading."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, query: str, detail: str) -> None:
        self.query = query
        self.detail = detail
        super().__init__(f"micro-batch of {query} failed: {detail}")


class IndexAccessError(FusionError):
    """Elasticsearch refused a write or read on an index for want of a privilege (401/403).

    The deployment's fault, not the record's: nothing is dead-lettered, the
    query stops (every later record would be refused the same way).
    """

    exit_code = ExitCode.CREDENTIALS

    def __init__(self, index: str, status: int, detail: str) -> None:
        self.index = index
        self.status = status
        super().__init__(
            f"Elasticsearch refused access to index {index} (HTTP {status}: {detail}); "
            "grant the configured user the write and read privileges on it "
            "(nothing was dead-lettered)"
        )


class IndexGoneError(FusionError):
    """An index the pipeline writes or reads does not exist (deleted while the pipeline ran)."""

    exit_code = ExitCode.DEPLOYMENT

    def __init__(self, index: str, detail: str) -> None:
        self.index = index
        super().__init__(
            f"index {index} does not exist ({detail}); restore it, or run `fusion run` "
            "again to create it empty (nothing was dead-lettered)"
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
