"""Run the pipeline: create topics and indexes, start the queries, watch them, stop them.

By default every query runs in one Spark application: one indexer per source,
the counter and the enricher. ``only`` runs one component, e.g. for
spark-submit per component: ``indexers``, ``indexer:<source>``, ``counter``,
``enricher``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JError

from fusion.bench.naive import start_naive
from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError, ExitCode, FusionError, SparkGoneError, WaitTimeoutError
from fusion.counter.query import start_counter
from fusion.enricher.query import start_enricher
from fusion.ops import status
from fusion.runtime import clients, spark_logs, topology
from fusion.runtime.exactly_once import FencedError
from fusion.runtime.health import HealthWatch
from fusion.runtime.listener import ProgressListener
from fusion.runtime.metrics import Metrics, pending_keys
from fusion.runtime.prometheus import MetricsServer, PipelineCollector
from fusion.runtime.stage import root_cause
from indexers.query import start_indexer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


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

    @classmethod
    def of(cls, query: str, error: object) -> FusionError:
        """The one-line error for a query Spark stopped with ``error`` (a Java stack trace)."""
        text = str(error) if error is not None else "stopped unexpectedly"
        if "FencedError" in text or "concurrently using" in text:
            # Fenced by the other process's transactional id, or caught by Spark
            # itself when both write the same checkpoint: the same story either way.
            return FencedError(f"fusion-{query}")
        cause = root_cause(text).removeprefix("fusion.runtime.stage.StageError: ")
        # Fusion's own errors read as sentences: drop the class name in front.
        return cls(query, re.sub(r"^(fusion|indexers|acks)\.[\w.]+Error: ", "", cause))


@dataclass(frozen=True)
class Selection:
    indexers: tuple[str, ...]
    counter: bool
    enricher: bool
    # The benchmark's baseline (``--only naive``): one query that looks up the other
    # N-1 sources on every arrival, instead of indexers, counter and enricher.
    naive: bool = False

    def queries(self, config: PipelineConfig) -> list[str]:
        """The selected queries' names (their checkpoints' too)."""
        if self.naive:
            return ["naive"]
        names = [f"indexer-{source}" for source in self.indexers]
        return names + ["counter"] * self.counter + ["enricher"] * self.enricher


def select(config: PipelineConfig, only: str | None) -> Selection:
    """Parse ``--only``."""
    everything = Selection(config.source_names, True, True)
    if only is None:
        return everything
    if only == "indexers":
        return Selection(config.source_names, False, False)
    if only == "counter":
        return Selection((), True, False)
    if only == "enricher":
        return Selection((), False, True)
    if only == "naive":
        return Selection((), False, False, naive=True)
    if only.startswith("indexer:") and only.removeprefix("indexer:") in config.source_names:
        return Selection((only.removeprefix("indexer:"),), False, False)
    choices = ", ".join(
        ["indexers", "counter", "enricher"] + [f"indexer:{s}" for s in config.source_names]
    )
    raise ConfigError("--only", "", f"unknown component {only!r}; choose one of {choices}")


def prepare(config: PipelineConfig) -> None:
    """Check both servers answer, then create missing topics and indexes."""
    clients.check_kafka(config.kafka)
    clients.check_elasticsearch(config.elasticsearch)
    topology.ensure_topics(config)
    topology.ensure_indexes(clients.elasticsearch(config.elasticsearch), config)


def start(
    spark: SparkSession, config: PipelineConfig, selection: Selection, metrics: Metrics
) -> list[StreamingQuery]:
    """Start the selected queries; their progress (rows read, state changes) goes to ``metrics``."""
    ProgressListener.attach(spark, config, metrics)
    if selection.naive:
        return [start_naive(spark, config, metrics)]
    queries = [
        start_indexer(spark, config, config.source(name), metrics) for name in selection.indexers
    ]
    if selection.counter:
        queries.append(start_counter(spark, config, metrics))
    if selection.enricher:
        queries.append(start_enricher(spark, config, metrics))
    return queries


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
                raise QueryFailedError.of(query.name, query.exception())
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


def wait_until(
    condition: Callable[[], bool],
    queries: list[StreamingQuery],
    timeout: float | None = None,
    what: str = "the condition",
    poll: float = 0.2,
) -> None:
    """Block until ``condition()`` holds; fail at once if a query died, or after ``timeout`` s."""
    watcher = Watcher(queries)
    deadline = None if timeout is None else time.monotonic() + timeout
    while not condition():
        watcher.check()
        if deadline is not None and time.monotonic() > deadline:
            raise WaitTimeoutError(
                f"{what} ({timeout:.0f} s)", "the queries run, but too slowly or not at all"
            )
        time.sleep(poll)


def run_until(
    queries: list[StreamingQuery],
    stop_when_idle: float | None,
    done: Callable[[], bool] | None = None,
    tick: Callable[[], None] | None = None,
    poll: float = 0.5,
    caught_up: Callable[[], bool] | None = None,
    on_started: Callable[[], None] | None = None,
    interrupted: threading.Event | None = None,
) -> None:
    """Block until ``done()``, ``interrupted``, or ``stop_when_idle`` s without input.

    Idle means no batch read a record for that long and, if ``caught_up`` is
    given, that it holds: a query still starting up has read nothing yet but
    is not idle while its input waits for it.
    """
    watcher = Watcher(queries)
    try:
        while True:
            watcher.check()
            if on_started is not None and all(q.lastProgress is not None for q in queries):
                on_started()  # every query finished its first trigger
                on_started = None
            if tick is not None:
                tick()
            if (done is not None and done()) or (interrupted is not None and interrupted.is_set()):
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


def status_line(metrics: Metrics) -> str:
    parts = [
        f"indexed {metrics.total('.indexed'):,}",
        f"acks {metrics.total('.acks'):,}",
        f"pending keys {pending_keys(metrics.counts()):,}",
        f"fired {metrics.get('counter.fired'):,}",
    ]
    # Lifecycle events only show once they happen: most runs have none.
    for name in ("incomplete", "updated"):
        if count := metrics.get(f"counter.{name}"):
            parts.append(f"{name} {count:,}")
    parts += [
        f"enriched {metrics.get('enricher.enriched'):,}",
        f"dlq {metrics.total('.dlq'):,}",
        f"ES lookups {metrics.get('enricher.es_requests'):,}",
    ]
    line = "  ".join(parts)
    # An outage being retried is news: it goes first.
    alerts = [f"[{message}]" for message in metrics.alerts().values()]
    return "  ".join([*alerts, line])


def summary(metrics: Metrics) -> dict[str, Any]:
    enriched = metrics.get("enricher.enriched")
    requests = metrics.get("enricher.es_requests")
    return {
        "enriched": enriched,
        "fired": metrics.get("counter.fired"),
        "pending_keys": pending_keys(metrics.counts()),
        "incomplete": metrics.get("counter.incomplete"),
        "updated": metrics.get("counter.updated"),
        "dead_letters": metrics.total(".dlq"),
        "es_requests": requests,
        "es_requests_per_key": round(requests / enriched, 4) if enriched else None,
    } | metrics.snapshot()


@dataclass(frozen=True)
class Hooks:
    """What the caller of :func:`execute` hears of the run, and how it says when to stop."""

    done: Callable[[Metrics], bool] | None = None  # stop once this holds
    tick: Callable[[Metrics], None] | None = None  # every poll: redraw a status line
    on_started: Callable[[], None] | None = None  # once every query finished a trigger
    say: Callable[[str], None] = lambda _: None  # one line worth telling the operator


def execute(
    config: PipelineConfig,
    selection: Selection,
    metrics: Metrics,
    stop_when_idle: float | None = None,
    hooks: Hooks = Hooks(),  # frozen: a shared default is safe
    submitted: bool = False,
) -> None:
    """Prepare topics and indexes, run the selected queries until done or idle, stop them.

    While they run, a :class:`~fusion.runtime.health.HealthWatch` checks both servers
    every few seconds and puts an outage first on the status line, and with
    ``[metrics] port`` set a :class:`~fusion.runtime.prometheus.MetricsServer` serves
    the metrics to Prometheus.
    """
    prepare(config)
    stages = selection.queries(config)
    with contextlib.ExitStack() as stack:
        if config.metrics.port is not None:
            server = stack.enter_context(metrics_server(config, stages, metrics))
            hooks.say(f"Prometheus metrics at {server.url}")
        app = f"fusion-{config.name}"
        spark = clients.spark_session(config, app_name=app, submitted=submitted)
        if not (config.spark.log_to_console or submitted):  # spark-submit logs its own way
            hooks.say(f"Spark's log: {spark_logs.log_file(config.spark, config.runtime.home, app)}")
        queries = start(spark, config, selection, metrics)
        try:
            stack.enter_context(HealthWatch(config, metrics))
            interrupted = stack.enter_context(ctrl_c_stops_at_next_poll())
            done, tick = hooks.done, hooks.tick
            run_until(
                queries,
                stop_when_idle,
                done=(lambda: done(metrics)) if done is not None else None,
                tick=(lambda: tick(metrics)) if tick is not None else None,
                caught_up=lambda: status.behind(config, stages) == 0,
                on_started=hooks.on_started,
                interrupted=interrupted,
            )
            if interrupted.is_set():
                raise KeyboardInterrupt
        finally:
            for name, megabytes in driver_memory(spark, submitted).items():
                metrics.set(f"driver.{name}_peak_mb", megabytes)


def metrics_server(config: PipelineConfig, stages: list[str], metrics: Metrics) -> MetricsServer:
    """The Prometheus endpoint of these stages' metrics, at ``[metrics] host:port``."""
    assert config.metrics.port is not None
    collector = PipelineCollector(
        config, stages, metrics, read_lag=lambda: status.stage_lag(config, stages)
    )
    return MetricsServer(collector, config.metrics.host, config.metrics.port)


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
    peaks = {"python": _peak_mb("self"), "jvm": _peak_mb(str(jvm_pid))}
    return {name: mb for name, mb in peaks.items() if mb is not None}


def _peak_mb(pid: str) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        kilobytes = int(
            next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
        )
    except (OSError, StopIteration, ValueError):
        return None
    return kilobytes // 1024
