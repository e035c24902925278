"""Run the pipeline: create topics and indexes, start the queries, watch them, stop them.

Which queries run, and what each reads, is the topology's
(:mod:`fusion.topology`): the caller hands :func:`execute` the queries it
selected, and each starts by its kind.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fusion.core import PipelineConfig
from fusion.counter import engine_here, outlived_state, start_counter
from fusion.elastic import Lease
from fusion.elastic import client as es_client
from fusion.elastic import indexes as es_indexes
from fusion.enricher import start_enricher
from fusion.kafka import client as kafka_client
from fusion.kafka import lag
from fusion.kafka import topics as kafka_topics
from fusion.observe import Figures, Metrics, names
from fusion.ops import HealthWatch, MetricsServer, PipelineCollector
from fusion.single import start_single
from fusion.spark import (
    ProgressListener,
    ctrl_c_stops_at_next_poll,
    daemon,
    driver_memory,
    resume,
    run_until,
    spark_session,
)
from fusion.spark import logs as spark_logs
from fusion.topology import Query, components, reads
from indexers import start_indexer, with_registered_fields

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


Starter = Callable[["SparkSession", PipelineConfig, Query, Metrics], "StreamingQuery"]


# How each kind of query of the topology starts (fusion.topology).
STARTERS: dict[str, Starter] = {
    "single": start_single,
    "indexer": start_indexer,
    "counter": start_counter,
    "enricher": start_enricher,
}


def prepare(config: PipelineConfig) -> None:
    """Check both servers answer, then create missing topics and indexes."""
    kafka_client.check(config.kafka)
    es_client.check(config.elasticsearch)
    kafka_topics.ensure_topics(config)
    # An Avro source without declared fields: the types its producer registered (before any
    # record, so the source index and the enriched index agree).
    typed = with_registered_fields(config)
    es_indexes.ensure_indexes(es_client.connect(config.elasticsearch), typed)


def start(
    spark: SparkSession,
    config: PipelineConfig,
    queries: Sequence[Query],
    metrics: Metrics,
    starters: Mapping[str, Starter] = STARTERS,
    checked: bool = False,
) -> list[StreamingQuery]:
    """Start ``queries``; their progress (rows read, state changes) goes to ``metrics``.

    ``starters``: how each kind starts (a benchmark brings its own kinds).
    ``checked``: their checkpoints were judged before Spark started
    (:func:`fusion.spark.resume.check_on_disk`).
    """
    ProgressListener.attach(spark, config, metrics)
    own = own_queries(queries)
    if own and not checked:
        resume.check(spark, config, own)  # a lost checkpoint: stop, or rebuild
    if counts(queries):
        outlived = outlived_state(spark, config, int(time.time() * 1000))
        if outlived is not None:
            metrics.alert(names.STATE_OUTLIVED_ALERT, outlived)
    return [starters[q.kind](spark, config, q, metrics) for q in queries]


def own_queries(queries: Sequence[Query]) -> list[str]:
    """The names of ``queries`` that Fusion starts (a benchmark's kinds bring their own)."""
    return [q.name for q in queries if q.kind in STARTERS]


def counts(queries: Sequence[Query]) -> bool:
    """Whether one of ``queries`` keeps the counter's state."""
    return any(q.kind in ("single", "counter") for q in queries)


def status_line(metrics: Metrics) -> str:
    return Figures(metrics.counts()).status_line(metrics.alerts())


def summary(metrics: Metrics) -> dict[str, Any]:
    return Figures(metrics.counts()).headline() | metrics.snapshot()


@dataclass(frozen=True)
class Hooks:
    """What the caller of :func:`execute` hears of the run, and how it says when to stop."""

    done: Callable[[Metrics], bool] | None = None  # stop once this holds
    tick: Callable[[Metrics], None] | None = None  # every poll: redraw a status line
    on_started: Callable[[], None] | None = None  # once every query finished a trigger
    say: Callable[[str], None] = lambda _: None  # one line worth telling the operator


def execute(
    config: PipelineConfig,
    queries: Sequence[Query],
    metrics: Metrics,
    stop_when_idle: float | None = None,
    hooks: Hooks = Hooks(),  # frozen: a shared default is safe
    submitted: bool = False,
    starters: Mapping[str, Starter] = STARTERS,
    ships: Iterable[str] = (),
) -> None:
    """Prepare topics and indexes, run the selected queries until done or idle, stop them.

    ``starters`` start each kind of query; ``ships``: packages beyond the runtime
    that their tasks need on the executors (:mod:`fusion.spark.shipping`).

    While they run, a :class:`~fusion.ops.health.HealthWatch` checks both servers
    every few seconds and puts an outage first on the status line, and with
    ``[metrics] port`` set a :class:`~fusion.ops.prometheus.MetricsServer` serves
    the metrics to Prometheus.
    """
    if counts(queries):
        config, chosen = engine_here(config)
        if chosen is not None:
            hooks.say(chosen)
    prepare(config)
    inputs = reads(queries)
    with contextlib.ExitStack() as stack:
        # Before any record is written: one process per component (fusion.elastic.lease).
        lease = stack.enter_context(
            Lease(
                es_client.connect(config.elasticsearch),
                config.lease_index,
                config.name,
                components(queries),
                config.pipeline.lease_seconds,
            )
        )
        # A lost checkpoint on this disk is refused before a JVM starts; in any other
        # store, once Spark runs.
        checked = resume.check_on_disk(config, own_queries(queries))
        if config.metrics.port is not None:
            server = stack.enter_context(metrics_server(config, inputs, metrics))
            hooks.say(f"Prometheus metrics at {server.url}")
        app = f"fusion-{config.name}"
        spark = spark_session(config, app, submitted, reserve_memory=True, ships=ships)
        if not (config.spark.log_to_console or submitted):  # spark-submit logs its own way
            hooks.say(f"Spark's log: {spark_logs.log_file(config.spark, config.runtime.home, app)}")
        daemon.start_workers(spark)
        running = start(spark, config, queries, metrics, starters, checked)
        try:
            stack.enter_context(HealthWatch(config, metrics))
            interrupted = stack.enter_context(ctrl_c_stops_at_next_poll())
            done, tick = hooks.done, hooks.tick
            run_until(
                running,
                stop_when_idle,
                done=(lambda: done(metrics)) if done is not None else None,
                tick=(lambda: tick(metrics)) if tick is not None else None,
                caught_up=lambda: lag.behind(config, inputs) == 0,
                on_started=hooks.on_started,
                interrupted=interrupted,
                guard=lease.check,
            )
            if interrupted.is_set():
                raise KeyboardInterrupt
        finally:
            for name, megabytes in driver_memory(spark, submitted).items():
                metrics.set(names.driver_peak_mb(name), megabytes)


def metrics_server(config: PipelineConfig, inputs: lag.Inputs, metrics: Metrics) -> MetricsServer:
    """The Prometheus endpoint of these queries' metrics, at ``[metrics] host:port``."""
    assert config.metrics.port is not None
    collector = PipelineCollector(
        config, list(inputs), metrics, read_lag=lambda: lag.stage_lag(config, inputs)
    )
    return MetricsServer(collector, config.metrics.host, config.metrics.port)
