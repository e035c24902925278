"""Run the pipeline: create topics and indexes, start the queries, watch them, stop them.

By default every query runs in one Spark application: one indexer query over
every source topic and the counter, whose output task enriches the keys it
fires (``enrich_in = "counter"``); with ``enrich_in = "enricher"`` an enricher
query of its own does that. ``only`` runs one component, e.g. for
spark-submit per component: ``indexers``, ``indexer:<source>`` (one source's
indexer as a query of its own), ``counter``, ``enricher``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError
from fusion.counter.engine import engine_here
from fusion.counter.outlived import outlived_state
from fusion.counter.query import start_counter
from fusion.elastic import client as es_client
from fusion.elastic import indexes as es_indexes
from fusion.elastic.lease import Lease
from fusion.enricher.query import start_enricher
from fusion.kafka import client as kafka_client
from fusion.kafka import lag
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from fusion.observe.figures import Figures
from fusion.observe.metrics import Metrics
from fusion.ops.health import HealthWatch
from fusion.ops.prometheus import MetricsServer, PipelineCollector
from fusion.single import QUERY as SINGLE
from fusion.single import refuse_a_stages_checkpoint, start_single
from fusion.spark import daemon, resume
from fusion.spark import logs as spark_logs
from fusion.spark.listener import ProgressListener
from fusion.spark.session import spark_session
from fusion.spark.watch import ctrl_c_stops_at_next_poll, driver_memory, run_until
from indexers.avro_fields import with_registered_fields
from indexers.query import start_indexer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


Starter = Callable[["SparkSession", PipelineConfig, Metrics], "StreamingQuery"]


@dataclass(frozen=True)
class Selection:
    indexers: tuple[str, ...]
    counter: bool
    enricher: bool
    single: bool = False  # the whole pipeline as one query (layout = "single")
    # One query of the caller's instead of the stages, by name: the benchmark's
    # naive baseline (fusion.bench.naive), which the pipeline knows nothing of.
    instead: tuple[str, Starter] | None = None

    def components(self, config: PipelineConfig) -> list[str]:
        """What this selection runs, as its leases name it: one process runs each."""
        if self.instead is not None:
            return [self.instead[0]]
        if self.single:
            return [*(f"indexer:{s}" for s in config.source_names), "counter", "enricher"]
        inline = config.pipeline.enrich_in == "counter"
        return (
            [f"indexer:{s}" for s in self.indexers]
            + ["counter"] * self.counter
            + ["enricher"] * (self.enricher or (self.counter and inline))
        )

    def queries(self, config: PipelineConfig) -> list[str]:
        """The selected queries' names (their checkpoints' too)."""
        if self.instead is not None:
            return [self.instead[0]]
        if self.single:
            return [SINGLE]
        names = [lag.indexer_stage(config, self.indexers)] if self.indexers else []
        return names + ["counter"] * self.counter + ["enricher"] * self.enricher


def select(config: PipelineConfig, only: str | None) -> Selection:
    """Parse ``--only`` (a component of a pipeline with ``layout = "stages"``)."""
    components = ["indexers", "counter", "enricher"]
    components += [f"indexer:{s}" for s in config.source_names]
    if only is not None and only not in components:
        choices = ", ".join(components)
        raise ConfigError("--only", "", f"unknown component {only!r}; choose one of {choices}")
    if config.pipeline.layout == "single":
        if only is not None:
            raise ConfigError(
                "--only",
                only,
                'this pipeline runs as one query (layout = "single"); set layout = "stages" '
                "in [pipeline] to run its components apart",
            )
        return Selection((), False, False, single=True)
    separate = config.pipeline.enrich_in == "enricher"
    if only is None:
        return Selection(config.source_names, True, separate)
    if only == "indexers":
        return Selection(config.source_names, False, False)
    if only == "counter":
        return Selection((), True, False)
    if only == "enricher":
        if not separate:
            raise ConfigError(
                "--only",
                "enricher",
                'this pipeline enriches in the counter\'s task (enrich_in = "counter"); set '
                'enrich_in = "enricher" in [pipeline] to run the enricher as a query of its own',
            )
        return Selection((), False, True)
    return Selection((only.removeprefix("indexer:"),), False, False)


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
    spark: SparkSession, config: PipelineConfig, selection: Selection, metrics: Metrics
) -> list[StreamingQuery]:
    """Start the selected queries; their progress (rows read, state changes) goes to ``metrics``."""
    ProgressListener.attach(spark, config, metrics)
    if selection.instead is not None:
        return [selection.instead[1](spark, config, metrics)]
    if selection.single:
        refuse_a_stages_checkpoint(spark, config)
    resume.check(spark, config, selection.queries(config))  # a lost checkpoint: stop, or rebuild
    if selection.counter or selection.single:
        outlived = outlived_state(spark, config, int(time.time() * 1000))
        if outlived is not None:
            metrics.alert(names.STATE_OUTLIVED_ALERT, outlived)

    if selection.single:
        return [start_single(spark, config, metrics)]
    queries = []
    if selection.indexers:
        queries.append(start_indexer(spark, config, selection.indexers, metrics))
    if selection.counter:
        queries.append(start_counter(spark, config, metrics))
    if selection.enricher:
        queries.append(start_enricher(spark, config, metrics))
    return queries


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
    selection: Selection,
    metrics: Metrics,
    stop_when_idle: float | None = None,
    hooks: Hooks = Hooks(),  # frozen: a shared default is safe
    submitted: bool = False,
) -> None:
    """Prepare topics and indexes, run the selected queries until done or idle, stop them.

    While they run, a :class:`~fusion.ops.health.HealthWatch` checks both servers
    every few seconds and puts an outage first on the status line, and with
    ``[metrics] port`` set a :class:`~fusion.ops.prometheus.MetricsServer` serves
    the metrics to Prometheus.
    """
    if selection.counter or selection.single:
        config, chosen = engine_here(config)
        if chosen is not None:
            hooks.say(chosen)
    prepare(config)
    stages = selection.queries(config)
    with contextlib.ExitStack() as stack:
        # Before any record is written: one process per component (fusion.elastic.lease).
        lease = stack.enter_context(
            Lease(
                es_client.connect(config.elasticsearch),
                config.lease_index,
                config.name,
                selection.components(config),
                config.pipeline.lease_seconds,
            )
        )
        if config.metrics.port is not None:
            server = stack.enter_context(metrics_server(config, stages, metrics))
            hooks.say(f"Prometheus metrics at {server.url}")
        app = f"fusion-{config.name}"
        spark = spark_session(config, app_name=app, submitted=submitted, reserve_memory=True)
        if not (config.spark.log_to_console or submitted):  # spark-submit logs its own way
            hooks.say(f"Spark's log: {spark_logs.log_file(config.spark, config.runtime.home, app)}")
        daemon.start_workers(spark)
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
                caught_up=lambda: lag.behind(config, stages) == 0,
                on_started=hooks.on_started,
                interrupted=interrupted,
                guard=lease.check,
            )
            if interrupted.is_set():
                raise KeyboardInterrupt
        finally:
            for name, megabytes in driver_memory(spark, submitted).items():
                metrics.set(names.driver_peak_mb(name), megabytes)


def metrics_server(config: PipelineConfig, stages: list[str], metrics: Metrics) -> MetricsServer:
    """The Prometheus endpoint of these stages' metrics, at ``[metrics] host:port``."""
    assert config.metrics.port is not None
    collector = PipelineCollector(
        config, stages, metrics, read_lag=lambda: lag.stage_lag(config, stages)
    )
    return MetricsServer(collector, config.metrics.host, config.metrics.port)
