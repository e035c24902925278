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
    """A streaming query stopped with an error."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, query: str, detail: str) -> None:
        self.query = query
        self.detail = detail
        super().__init__(
            f"query {query} failed: {detail}; fix the cause and run again, "
            "it resumes from its checkpoint"
        )


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
    """A topic or index could not be created."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        super().__init__(f"could not create {what}: {detail}")


class StageError(FusionError):
    """A stage's micro-batch failed in its tasks; the message is the first cause worth reading."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, query: str, detail: str) -> None:
        self.query = query
        self.detail = detail
        super().__init__(f"micro-batch of {query} failed: {detail}")
