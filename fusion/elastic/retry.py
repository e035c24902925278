"""Bounded exponential backoff for calls to Elasticsearch, shared by every stage.

A transient failure (a 429, a 5xx, a refused or timed-out connection) is
retried with exponential backoff until the policy's time budget or attempt
count runs out; then :class:`RetryBudgetExceeded` fails the micro-batch, Spark
stops the query, and a restart resumes from the checkpoint. While a call is
being retried, :class:`fusion.observe.metrics.Metrics` carries an alert that the
status line shows ("Elasticsearch unavailable, retrying").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from elastic_transport import ConnectionError as ESConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from fusion.elastic.errors import IndexAccessError, IndexGoneError, RetryBudgetExceeded
from fusion.observe import ES_ALERT, Metrics, names

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
INDEX_GONE = "index_not_found_exception"
ACCESS_DENIED_ERROR = "security_exception"


class Transient(Exception):
    """A failure worth retrying; ``str(self)`` says what failed."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff from ``initial`` to ``maximum`` s, within ``budget_seconds``."""

    attempts: int = 1000
    initial: float = 0.25
    maximum: float = 5.0
    budget_seconds: float = 300.0


def mget_docs(response: Any) -> list[dict[str, Any]]:
    """The ``docs`` of an ``_mget`` answer; :class:`Transient` if a shard could not answer.

    While a node recovers its shards (after a restart) ``_mget`` answers 200
    with an ``error`` per document of an unavailable shard instead of
    ``found``: such a document is not missing, the lookup is to be retried.
    """
    docs: list[dict[str, Any]] = response["docs"]
    failed = next((doc for doc in docs if "error" in doc), None)
    if failed is None:
        return docs
    error = failed["error"]
    index = str(failed.get("_index", "?"))
    kind = error.get("type") if isinstance(error, dict) else None
    reason = f"_mget: {error.get('reason', '')}" if isinstance(error, dict) else str(error)
    # Not a shard that is recovering: the index is not there, or not for this user.
    if kind == INDEX_GONE:
        raise IndexGoneError(index, reason)
    if kind == ACCESS_DENIED_ERROR:
        raise IndexAccessError(index, 403, reason)
    raise Transient(f"_mget: {error}")


def index_gone(exc: ApiError) -> bool:
    """Whether an Elasticsearch error says the index does not exist (not: a document)."""
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    return isinstance(error, dict) and error.get("type") == INDEX_GONE


def call_with_retries(
    call: Callable[[], T],
    what: str,
    policy: RetryPolicy,
    metrics: Metrics | None = None,
) -> T:
    """``call()`` until it returns; retry on :class:`Transient` and ES connection/5xx/429 errors.

    Raises :class:`RetryBudgetExceeded` when the policy is used up. A permanent
    error (a 4xx other than 408/429) is raised at once.
    """

    def before_sleep(state: RetryCallState) -> None:
        if metrics is not None and state.outcome is not None:
            metrics.alert(
                ES_ALERT, f"Elasticsearch unavailable, retrying: {state.outcome.exception()}"
            )
            metrics.add(names.ES_RETRIES)

    def attempt() -> T:
        try:
            return call()
        except (ESConnectionError, ConnectionTimeout) as exc:
            raise Transient(f"{type(exc).__name__}: {exc}") from exc
        except ApiError as exc:
            if exc.meta.status in TRANSIENT_STATUS:
                raise Transient(f"status {exc.meta.status}: {exc.message}") from exc
            raise

    try:
        for retrying in Retrying(
            stop=stop_after_attempt(policy.attempts) | stop_after_delay(policy.budget_seconds),
            wait=wait_exponential(multiplier=policy.initial, max=policy.maximum),
            retry=retry_if_exception_type(Transient),
            before_sleep=before_sleep,
            reraise=False,
        ):
            with retrying:
                result = attempt()
    except RetryError as exc:
        last = exc.last_attempt.exception()
        raise RetryBudgetExceeded(what, str(last), policy.budget_seconds) from None
    if metrics is not None:
        metrics.clear_alert(ES_ALERT)
    return result
