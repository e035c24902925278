"""Calls to Kafka that must not give up too early, nor hang for ever.

- :func:`retry_kafka` calls again while Kafka answers "not now": a retriable
  error, a coordinator that moved or is loading, a broker that is down (with
  tenacity, as :mod:`fusion.elastic.retry` does for Elasticsearch).
- :func:`watched` runs a call that blocks while Kafka is away (a transactional
  producer's ``send_offsets_to_transaction``, ``commit_transaction``) and
  notices when it does not return although the broker answers again:
  librdkafka 2.16 can wait for ever in ``send_offsets_to_transaction`` when
  the broker restarted while the producer was idle (seen here: the group
  coordinator is never looked up again). The caller then drops that producer
  and starts a fresh one under the same transactional id, which fences the
  stuck one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay, wait_fixed

from fusion.core import CredentialsError, FusionError, ServiceUnavailableError
from fusion.kafka.errors import (
    FencedError,
    KafkaAccessError,
    KafkaRefusedError,
    MessageTooLargeError,
)

T = TypeVar("T")

# Answers that mean "not now" (a broker restarting, a coordinator moving or
# loading), which librdkafka does not always flag as retriable.
TRANSIENT = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.UNSTABLE_OFFSET_COMMIT,
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
        # A partition's leadership moving, or a client's metadata older than the broker's
        # (seen after a broker was paused and came back): ask again once metadata is fresh.
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
    }
)
FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)
ACCESS_DENIED = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)
NOT_AUTHENTICATED = frozenset({KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION})
TOO_LARGE = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})
# Refusals that another attempt would meet again.
REFUSED = ACCESS_DENIED | NOT_AUTHENTICATED | TOO_LARGE
# How long a call may block while the broker answers metadata requests.
STUCK_AFTER_SECONDS = 20.0


class Stuck(Exception):
    """A call did not return although Kafka answers: drop the client that made it.

    ``call`` is the thread still inside the call: whoever drops the client
    closes it once that thread is out (:func:`retire`)."""

    def __init__(self, message: str, call: threading.Thread | None = None) -> None:
        super().__init__(message)
        self.call = call


def retire(client: Any, call: threading.Thread | None, budget: float) -> threading.Thread:
    """Close ``client`` once ``call`` (a stuck call on it) returned, at most ``budget`` s on.

    librdkafka gives up a blocked transactional call at its own timeout (the
    budget); closing the client before that would wait on the same call. A
    daemon thread does the waiting, so a dropped client never keeps its
    threads and sockets for the life of the process.
    """

    def close() -> None:
        if call is not None:
            call.join(budget)
        with contextlib.suppress(Exception):
            client.close()

    closer = threading.Thread(target=close, name="fusion-kafka-retire", daemon=True)
    closer.start()
    return closer


def retry_kafka(
    call: Callable[[], T], budget: float, what: str, on_retry: Callable[[str], None] | None = None
) -> T:
    """``call`` again while Kafka says "not now", for ``budget`` seconds; else its error."""

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None:
            error = state.outcome.exception().args[0]  # type: ignore[union-attr]
            on_retry(f"Kafka unavailable, retrying {what}: {error.str()}")

    for attempt in Retrying(
        stop=stop_after_delay(budget),
        wait=wait_fixed(0.5),
        retry=retry_if_exception(_not_now),
        before_sleep=before_sleep,
        reraise=True,  # the budget ran out: Kafka's own error, as from a single call
    ):
        with attempt:
            return call()
    raise AssertionError("unreachable: tenacity returns or raises")


def _not_now(exc: BaseException) -> bool:
    """Kafka's "not now": retriable, or a coordinator/broker answer it does not flag so."""
    if not isinstance(exc, KafkaException):
        return False
    error = exc.args[0]
    return bool((error.retriable() or error.code() in TRANSIENT) and not error.fatal())


def watched(call: Callable[[], T], client: Any, budget: float) -> T:
    """``call()`` in a helper thread; :class:`Stuck` if it hangs while ``client`` reaches Kafka.

    While the broker is down the call may block as long as ``budget``; once
    the broker answers ``client``'s metadata requests again, it gets
    :data:`STUCK_AFTER_SECONDS` more.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="fusion-kafka-call", daemon=True)
    worker.start()
    started = time.monotonic()
    reachable_since: float | None = None
    while True:
        worker.join(1.0)
        if not worker.is_alive():
            if "error" in outcome:
                raise outcome["error"]
            return outcome["value"]  # type: ignore[no-any-return]
        now = time.monotonic()
        if now - started > budget:
            raise Stuck(f"no answer within the {budget:.0f} s budget", worker)
        if now - started < STUCK_AFTER_SECONDS:
            continue
        if _answers(client):
            reachable_since = reachable_since or now
            if now - reachable_since > STUCK_AFTER_SECONDS:
                raise Stuck("no answer although the broker is back", worker)
        else:
            reachable_since = None


def _answers(client: Any) -> bool:
    try:
        client.list_topics(timeout=5)
    except KafkaException:
        return False
    return True


def classify(error: KafkaError, what: str, bootstrap: str) -> FusionError:
    """The Fusion error for Kafka's ``error`` while doing ``what``: by its code, not by
    whether librdkafka calls it fatal (a fenced producer and a missing ACL both are)."""
    code = error.code()
    detail = f"{error.name()}: {error.str()}"
    if code in FENCED:
        return FencedError(what)
    if code in ACCESS_DENIED:
        return KafkaAccessError(what, detail)
    if code in NOT_AUTHENTICATED:
        return CredentialsError("Kafka", bootstrap, detail)
    if code in TOO_LARGE:
        return MessageTooLargeError(what, detail)
    if error.retriable() or code in TRANSIENT:
        return ServiceUnavailableError("Kafka", bootstrap, detail)
    return KafkaRefusedError(what, detail)
