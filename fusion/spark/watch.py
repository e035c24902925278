"""Watch running queries: fail loudly when one dies, tell when input stopped, stop them.

Also what a driver reports of itself when it stops (its peak memory) and how
Ctrl-C stops a run at the next poll instead of inside a py4j call.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JError

from fusion.core import FusionError, SparkGoneError
from fusion.core.machine import procfs
from fusion.kafka import FencedError, KafkaAccessError, KafkaRefusedError, MessageTooLargeError
from fusion.spark.causes import error_class, root_cause
from fusion.spark.errors import QueryFailedError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


class Watcher:
    """Follows the queries' progress: fails loudly on a query error, tells when input stopped."""

    def __init__(self, queries: list[StreamingQuery]) -> None:
        self.queries = queries
        self.last_batch: dict[str, int] = {}
        self.last_input = time.monotonic()

    def check(self) -> None:
        """Raise :class:`QueryFailedError` if a query died; note any new input."""
        for query in self.queries:
            if not query.isActive:
                raise query_failure(query.name, query.exception())
            self._note_input(query)
            if query.status["isDataAvailable"]:
                # A batch still working on new data is not idleness.
                self.last_input = time.monotonic()

    def _note_input(self, query: StreamingQuery) -> None:
        """Whether batches since the last check read rows.

        The last report is one py4j call; the recent ones (up to a hundred,
        one call each) are read only when more than one batch ran between checks.
        """
        last = query.lastProgress
        seen = self.last_batch.get(query.name, -1)
        if last is None or last["batchId"] <= seen:
            return
        reports = [last] if last["batchId"] == seen + 1 else query.recentProgress
        for progress in reports:
            if progress["batchId"] > seen and progress["numInputRows"] > 0:
                self.last_input = time.monotonic()
        self.last_batch[query.name] = last["batchId"]

    def idle_for(self) -> float:
        return time.monotonic() - self.last_input


def run_until(
    queries: list[StreamingQuery],
    stop_when_idle: float | None,
    done: Callable[[], bool] | None = None,
    tick: Callable[[], None] | None = None,
    poll: float = 0.5,
    caught_up: Callable[[], bool] | None = None,
    on_started: Callable[[], None] | None = None,
    interrupted: threading.Event | None = None,
    guard: Callable[[], None] | None = None,
) -> None:
    """Block until ``done()``, ``interrupted``, or ``stop_when_idle`` s without input.

    ``guard`` raises to stop the run (another process took it over).

    Idle means no batch read a record for that long and, if ``caught_up`` is
    given, that it holds: a query still starting up has read nothing yet but
    is not idle while its input waits for it.
    """
    watcher = Watcher(queries)
    try:
        while True:
            watcher.check()
            if guard is not None:
                guard()
            if on_started is not None and all(q.lastProgress is not None for q in queries):
                on_started()  # every query finished its first trigger
                on_started = None
            if tick is not None:
                tick()
            if interrupted is not None and interrupted.is_set():
                return
            if done is not None and done():
                _let_batches_commit(queries)
                return
            if stop_when_idle is not None and watcher.idle_for() >= stop_when_idle:
                if caught_up is None or caught_up():
                    return
                watcher.last_input = time.monotonic()
            time.sleep(poll)
    except (Py4JError, ConnectionError) as exc:
        raise SparkGoneError(f"{type(exc).__name__}: {exc}") from None
    finally:
        for query in queries:
            with contextlib.suppress(Py4JError, ConnectionError):
                query.stop()


def _let_batches_commit(queries: list[StreamingQuery], timeout: float = 30.0) -> None:
    """Wait (a while) for the batches in flight to finish before the queries are stopped.

    What ``done`` waits for (every key enriched) is true once a batch's
    foreachBatch has published, before Spark writes the batch to its commit
    log; a stop in between leaves the batch to be replayed by the next run and
    its state unreadable by ``fusion status`` until then.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(q.status["isTriggerActive"] for q in queries):
        time.sleep(0.1)


@contextlib.contextmanager
def ctrl_c_stops_at_next_poll() -> Iterator[threading.Event]:
    """Ctrl-C sets the event the watch loop polls; a second Ctrl-C interrupts at once.

    Spark's own handler raises ``KeyboardInterrupt`` wherever the main thread
    is, often inside a py4j call, whose connection is then left half read:
    the queries' stop that follows fails and the run ends without its summary.
    """
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted  # signals reach the main thread only
        return

    def handler(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def driver_memory(spark: SparkSession, submitted: bool) -> dict[str, int]:
    """Peak resident memory (MB) of this driver's Python process and of its JVM.

    Both are the kernel's high-water mark of the process's own memory
    (``VmHWM``), not ``getrusage``'s ``ru_maxrss``: that one carries over the
    peak of the process that forked and exec'd this one (a benchmark holding
    its whole dataset, say), which is not the driver's. In local mode the JVM
    also runs the executors' tasks; on a cluster it is the driver's alone.
    """
    gateway = getattr(spark.sparkContext._gateway, "proc", None)
    jvm_pid = os.getppid() if submitted or gateway is None else gateway.pid
    peaks = {"python": procfs.peak_mb("self"), "jvm": procfs.peak_mb(jvm_pid)}
    return {name: mb for name, mb in peaks.items() if mb is not None}


# fusion.output.Writer's refusals: "<what> (<Kafka's exception>: <its message>)".
_JVM_REFUSAL = re.compile(r"^(.*?) \((\w+: .*)\)$")


def query_failure(query: str, error: object) -> FusionError:
    """The one-line error for a query Spark stopped with ``error`` (a Java stack trace)."""
    text = str(error) if error is not None else "stopped unexpectedly"
    if "FencedError" in text or "concurrently using" in text:
        # Fenced by the other process's transactional id, or caught by Spark
        # itself when both write the same checkpoint: the same story either way.
        return FencedError(f"fusion-{query}")
    cause = root_cause(text).removeprefix("fusion.spark.errors.StageError: ")
    found = error_class(cause)
    if found is None:
        return QueryFailedError(query, cause)
    cls, detail = found
    jvm = _JVM_REFUSAL.match(detail)
    if cls in (KafkaAccessError, MessageTooLargeError, KafkaRefusedError) and jvm:
        # The executor's writer said which refusal, and what and why: its own line.
        return cls(jvm.group(1), jvm.group(2))
    # A task's own error (an index gone) keeps its exit code; its text reads as a sentence.
    return QueryFailedError(query, detail, cls.exit_code)
