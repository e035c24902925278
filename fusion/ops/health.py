"""Watch Kafka and Elasticsearch while the pipeline runs, and say so when one is down or full.

The stages retry an unreachable server inside their executor tasks, where the
driver cannot see it until the task ends. So the driver asks both servers
itself every few seconds (cluster health, broker metadata) and keeps an alert
on the status line while one does not answer: an outage is news the moment it
starts, not when a micro-batch finally gives up.

Back-pressure is watched the same way: Elasticsearch answers 429 when a thread
pool's queue is full, and the tasks retry with backoff, which a storm of them
slows to a crawl. Each probe also reads how many requests the nodes rejected
(their thread pools' counters): while that number grows, an alert says so
(status line, ``fusion status``, Prometheus), and the rejections are counted
(``es.rejected``); it clears after two quiet probes.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from fusion.core import PipelineConfig
from fusion.elastic import client as es_client
from fusion.kafka import client as kafka_client
from fusion.observe import ES_ALERT, ES_BACKPRESSURE_ALERT, ES_REJECTED, KAFKA_ALERT, Metrics


class HealthWatch:
    """A daemon thread probing both servers every ``interval`` seconds; use it as a context."""

    def __init__(self, config: PipelineConfig, metrics: Metrics, interval: float = 2.0) -> None:
        self.config = config
        self.metrics = metrics
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fusion-health", daemon=True)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        settings = self.config.elasticsearch.model_copy(update={"request_timeout": self.interval})
        es = es_client.connect(settings)
        admin = kafka_client.shared_admin(self.config.kafka)
        try:
            self._probe(es, admin)
        finally:
            es.close()  # the probe's connections go with the watch (a driver restarts queries)

    def _probe(self, es: Any, admin: Any) -> None:
        pressure = BackPressure(self.interval)
        while not self._stop.wait(self.interval):
            try:
                es.cluster.health(timeout=f"{self.interval:g}s")
                self.metrics.clear_alert(ES_ALERT)
                self._pressure(pressure, es_client.rejected(es))
            except Exception as exc:
                message = f"Elasticsearch unavailable, retrying: {type(exc).__name__}"
                self.metrics.alert(ES_ALERT, message)
            try:
                admin.list_topics(timeout=self.interval)
                self.metrics.clear_alert(KAFKA_ALERT)
            except Exception as exc:
                self.metrics.alert(KAFKA_ALERT, f"Kafka unavailable, retrying: {exc}")

    def _pressure(self, pressure: BackPressure, total: int) -> None:
        new, message = pressure.observe(total)
        if new:
            self.metrics.add(ES_REJECTED, new)
        if message is not None:
            self.metrics.alert(ES_BACKPRESSURE_ALERT, message)
        elif pressure.quiet:
            self.metrics.clear_alert(ES_BACKPRESSURE_ALERT)


class BackPressure:
    """Rejections between probes, and what to say of them (pure)."""

    QUIET_PROBES = 2  # probes without a rejection before the alert clears

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.last: int | None = None
        self.calm = 0

    def observe(self, total: int) -> tuple[int, str | None]:
        """New rejections since the last probe, and the alert line (None: none now)."""
        new = 0 if self.last is None or total < self.last else total - self.last
        self.last = total  # a node restarted: its counters start again
        self.calm = 0 if new else self.calm + 1
        if not new:
            return 0, None
        return new, (
            f"Elasticsearch rejecting requests (429, a queue full): {new:,} in the last "
            f"{self.interval:g} s; the stages retry them with backoff"
        )

    @property
    def quiet(self) -> bool:
        return self.calm >= self.QUIET_PROBES
