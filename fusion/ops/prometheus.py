"""Prometheus metrics of a running pipeline: ``fusion run --metrics-port 9464``.

The driver's :class:`~fusion.observe.metrics.Metrics` already adds up what every
task of every query did; :func:`families` renders those counts in
Prometheus's conventions (``fusion_..._total`` counters, base units, labels
for stage, source and kind) at scrape time, so nothing is counted twice and
nothing runs when nobody scrapes. Consumer lag is the one figure read from
Kafka: at most once per ``LAG_MAX_AGE`` seconds, whatever the scrape rate.

The counts are this process's since it started; a restart resets them, which
``rate()`` and ``increase()`` expect of a counter.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from fusion.core import ConfigError, PipelineConfig
from fusion.observe import ES_ALERT, ES_BACKPRESSURE_ALERT, KAFKA_ALERT, Figures, Metrics, sketch
from fusion.ops.stage_metrics import stage_families

LAG_MAX_AGE = 5.0  # seconds a consumer-lag reading is served before it is read again
# The alert rules that ship: what they read is what this module exports (docs/operations.md).
ALERT_RULES = Path(__file__).with_name("alerts.yml")


def families(
    config: PipelineConfig,
    queries: list[str],
    counts: Mapping[str, int],
    alerts: Mapping[str, str],
    lag: Mapping[str, int],
) -> list[Metric]:
    """Every metric of the running ``queries`` from the driver's counts (pure, plain data).

    A query that has done nothing yet still shows, at 0: a dashboard's rate
    of a series that does not exist is no rate at all.
    """
    figures = Figures(counts)
    found = [
        *stage_families(config, figures, queries),
        _per_query(
            _dead_letter_stages(config),
            figures.query_dead_letters,
            CounterMetricFamily(
                "fusion_dead_letters",
                "Records sent to the dead-letter topic, by the stage that sent them",
                labels=["query"],
            ),
        ),
        _per_query(
            queries,
            figures.input_records,
            CounterMetricFamily(
                "fusion_input_records", "Records the query's batches read", labels=["query"]
            ),
        ),
        _per_query(
            queries,
            figures.batch_seconds,
            CounterMetricFamily(
                "fusion_batch_seconds",
                "Time the query spent in batches that read rows",
                labels=["query"],
            ),
        ),
        _es_requests(config, figures),
        CounterMetricFamily(
            "fusion_es_retries", "Elasticsearch calls retried", value=figures.es_retries
        ),
        *_latency(figures, config.metrics.latency_objective_seconds),
        _running(queries, figures),
    ]
    lag_family = GaugeMetricFamily(
        "fusion_consumer_lag_records",
        "Records the query still has to read from its input topics",
        labels=["query"],
    )
    for query, value in sorted(lag.items()):
        lag_family.add_metric([query], value)
    up = GaugeMetricFamily(
        "fusion_server_up", "1 while the driver's probe of the server succeeds", labels=["server"]
    )
    for server, alert in (("kafka", KAFKA_ALERT), ("elasticsearch", ES_ALERT)):
        up.add_metric([server], 0 if alert in alerts else 1)
    pressure = [
        GaugeMetricFamily(
            "fusion_es_backpressure_active",
            "1 while Elasticsearch rejects requests (429, a thread pool's queue full)",
            value=1 if ES_BACKPRESSURE_ALERT in alerts else 0,
        ),
        CounterMetricFamily(
            "fusion_es_rejected",
            "Requests Elasticsearch rejected (429) while the driver watched",
            value=figures.es_rejected,
        ),
    ]
    return [*found, lag_family, up, *pressure]


def _es_requests(config: PipelineConfig, figures: Figures) -> Metric:
    family = CounterMetricFamily(
        "fusion_es_requests",
        "Requests sent to Elasticsearch, by stage and kind",
        labels=["stage", "kind"],
    )
    lookup = "mget" if config.pipeline.lookup == "batched" else "get"
    rows = [(f"indexer-{s}", "bulk", figures.source(s).bulk_requests) for s in config.source_names]
    rows += [
        ("enricher", lookup, figures.lookups),
        ("enricher", "bulk", figures.enricher_bulk_requests),
    ]
    for stage, kind, value in rows:
        family.add_metric([stage, kind], value)
    return family


def _dead_letter_stages(config: PipelineConfig) -> list[str]:
    """The stages that dead-letter (one query may run several: ``single``, ``indexers``).

    The label keeps a stage's name whichever layout runs it, so an alert on
    ``indexer-<source>`` holds when the layout changes.
    """
    return [*(f"indexer-{s}" for s in config.source_names), "counter", "enricher"]


def _per_query(
    queries: list[str], value: Callable[[str], float], family: CounterMetricFamily
) -> Metric:
    for query in queries:
        family.add_metric([query], value(query))
    return family


def _running(queries: list[str], figures: Figures) -> Metric:
    """1 per query Spark runs; 0 before it started (a driver waiting for executors) or once
    it ended. A process gone is Prometheus's own ``up == 0``."""
    family = GaugeMetricFamily("fusion_query_up", "1 while Spark runs the query", labels=["query"])
    for query in queries:
        family.add_metric([query], 1 if figures.running(query) else 0)
    return family


def _latency(figures: Figures, objective: float) -> Iterator[Metric]:
    """Last record-to-enriched quantiles, as a summary: from Fusion's sketch, not interpolated.

    A histogram's fixed buckets make Prometheus interpolate within a bucket, a
    value no key may have had; the sketch answers within its relative error
    (the HELP text states it for the current level).
    """
    spread = figures.latency()
    error = spread["relative_error"] or sketch.RELATIVE_ERROR
    family = Metric(
        "fusion_enrichment_latency_seconds",
        "Seconds from the Kafka timestamp of a key's last source record to its enriched "
        "document being confirmed; quantiles "
        f"within {error:.1%} of a latency some key had",
        "summary",
    )
    name = "fusion_enrichment_latency_seconds"
    for label, quantile in sketch.QUANTILES.items():
        if (value := spread[label]) is not None:
            family.add_sample(name, {"quantile": f"{quantile:g}"}, value)
    family.add_sample(f"{name}_count", {}, spread["count"] or 0)
    family.add_sample(f"{name}_sum", {}, figures.latency_sum_seconds)
    yield family
    # A summary's quantiles are since the start; an alert on the last minutes divides
    # the rate of keys over the objective by the rate of keys.
    yield CounterMetricFamily(
        "fusion_enrichment_latency_over_objective",
        "Keys enriched later than [metrics] latency_objective_seconds after their last record",
        value=figures.latency_over_objective,
    )
    yield GaugeMetricFamily(
        "fusion_enrichment_latency_objective_seconds",
        "[metrics] latency_objective_seconds: the latency this pipeline promises",
        value=objective,
    )


class PipelineCollector(Collector):
    """Renders the driver's metrics at each scrape; reads consumer lag at most every few seconds."""

    def __init__(
        self,
        config: PipelineConfig,
        queries: list[str],
        metrics: Metrics,
        read_lag: Callable[[], Mapping[str, int]],
    ) -> None:
        self.config = config
        self.queries = queries
        self.metrics = metrics
        self.read_lag = read_lag
        self._lag: Mapping[str, int] = {}
        self._lag_at = -LAG_MAX_AGE
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        counts, alerts = self.metrics.counts(), self.metrics.alerts()
        yield from families(self.config, self.queries, counts, alerts, self.lag())

    def lag(self) -> Mapping[str, int]:
        with self._lock:
            if time.monotonic() - self._lag_at >= LAG_MAX_AGE:
                # Kafka down: fusion_server_up says so, and the last reading stays.
                with contextlib.suppress(Exception):
                    self._lag = self.read_lag()
                self._lag_at = time.monotonic()
            return self._lag


class MetricsServer:
    """The ``/metrics`` endpoint while inside: ``with MetricsServer(...): run the queries``."""

    def __init__(self, collector: Collector, host: str, port: int) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        # The driver's CPU, memory and process_start_time_seconds: a restart shows as its change.
        ProcessCollector(registry=self.registry)
        self.host = host
        self.port = port
        self._server: Any = None

    def __enter__(self) -> MetricsServer:
        from prometheus_client import start_http_server

        try:
            self._server, _ = start_http_server(self.port, self.host, registry=self.registry)
        except OSError as exc:
            raise ConfigError(
                "--metrics-port",
                "",
                f"cannot serve metrics on {self.host}:{self.port} ({exc.strerror}); "
                "choose a free port",
            ) from None
        self.port = self._server.server_port
        return self

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
