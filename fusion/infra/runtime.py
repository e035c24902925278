"""`fusion infra`: a real Kafka broker and Elasticsearch node on 127.0.0.1, no Docker needed.

``up`` goes through these steps:

1. check Java 17+ is installed;
2. fetch what the cache lacks (Kafka jars, Elasticsearch, Spark connector) with Maven;
3. check the ports are free (a service already running from an earlier ``up`` is kept);
4. start both servers, each in its own process group, data under the state directory;
   with ``spark_workers``, also a Spark standalone master and that many workers
   (:mod:`fusion.infra.spark.standalone`); with ``cdc_ports``, PostgreSQL and a Kafka Connect
   worker with Debezium, once Kafka is healthy (:mod:`fusion.infra.cdc`);
5. wait until Kafka answers metadata, Elasticsearch reports yellow/green health
   and the Spark master counts its workers, stopping what it started and
   showing the log tail of the one that failed otherwise;
6. record ports and versions in ``runtime.json`` for ``status`` and ``down``.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from fusion.core import RuntimeSettings
from fusion.infra.artifacts import (
    ELASTICSEARCH_VERSION,
    KAFKA_VERSION,
    ArtifactCache,
    preparing,
)
from fusion.infra.cdc import (
    CdcService,
    cdc_services,
    cdc_status,
    cdc_urls,
    recorded_ports,
    start_cdc,
    wait_cdc,
)
from fusion.infra.elasticsearch import ElasticsearchPorts, LocalElasticsearch
from fusion.infra.errors import InfraError
from fusion.infra.java import elasticsearch_java_home, java_home
from fusion.infra.kafka import KafkaPorts, LocalKafka
from fusion.infra.prometheus import LocalPrometheus, Scraping, recorded_prometheus, start_prometheus
from fusion.infra.prometheus import url_of as prometheus_url_of
from fusion.infra.registry import apicurio
from fusion.infra.secure import SecureMaterial, write_env
from fusion.infra.secure import ensure as ensure_material
from fusion.infra.services import (
    Endpoints,
    Service,
    ServiceStatus,
    check_state,
    companion_port,
    es_version_at,
    main_status,
    reuse,
    wait_healthy,
)
from fusion.infra.spark import LocalSparkCluster, spark_status, start_cluster, wait_until_alive

OPT_IN = ("spark", "postgres", "connect", "registry", "prometheus")  # started by options of `up`
Extra = apicurio.LocalRegistry | LocalPrometheus
Started = LocalKafka | LocalElasticsearch | LocalSparkCluster | CdcService | Extra


class LocalRuntime:
    """The local Kafka + Elasticsearch pair: artifacts in ``home``, state in ``state_dir``."""

    def __init__(
        self,
        home: Path,
        state_dir: Path | None = None,
        kafka_heap: str = "512m",
        es_heap: str = "512m",
        es_version: str | None = None,
        secure: bool | None = None,
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.state_dir = state_dir or home / "runtime"
        # Asked for, else what the last `up` ran (so `down` and `status` find it), else the default.
        state = self._read_state()
        recorded = state.get("elasticsearch", {}).get("version")
        self.es_version: str = es_version or recorded or ELASTICSEARCH_VERSION
        self.secure: bool = bool(state.get("secure", False)) if secure is None else secure
        self.cache = ArtifactCache(home, self.es_version)
        self.kafka_heap = kafka_heap
        self.es_heap = es_heap
        self.jvm_options = tuple(jvm_options)  # for every server JVM started

    @classmethod
    def from_settings(cls, settings: RuntimeSettings) -> LocalRuntime:
        return cls(
            settings.home,
            settings.state_dir,
            kafka_heap=settings.kafka_heap,
            es_heap=settings.es_heap,
            es_version=settings.es_version,
            jvm_options=shlex.split(settings.jvm_options),
        )

    @property
    def state_file(self) -> Path:
        return self.state_dir / "runtime.json"

    @property
    def material(self) -> SecureMaterial | None:
        """The CA, certificate and credentials of a secured runtime (None when plain)."""
        return SecureMaterial(self.state_dir / "secure") if self.secure else None

    def kafka(self) -> LocalKafka:
        libs = self.cache.kafka_libs()
        return LocalKafka(libs, self.state_dir, self.kafka_heap, self.material, self.jvm_options)

    def elasticsearch(self) -> LocalElasticsearch:
        return LocalElasticsearch(
            self.cache.elasticsearch_home(),
            self.state_dir,
            self.es_heap,
            elasticsearch_java_home(self.es_version),
            self.material,
            jvm_options=self.jvm_options,
        )

    def spark(self, workers: int | None = None) -> LocalSparkCluster:
        """The standalone cluster, with ``workers`` (default: as many as were started)."""
        recorded = self._read_state().get("spark", {}).get("workers", 0)
        count = workers if workers is not None else recorded
        return LocalSparkCluster(self.state_dir, count, jvm_options=self.jvm_options)

    def up(
        self,
        kafka_port: int = 9092,
        es_port: int = 9200,
        on_step: Callable[[str], None] = lambda _: None,
        timeout: float = 180.0,
        spark_workers: int = 0,
        spark_port: int = 7077,
        on_change: Callable[[str], None] = lambda _: None,
        cdc_ports: tuple[int, int] | None = None,
        registry_port: int | None = None,
        prometheus: tuple[int, Scraping] | None = None,
    ) -> Endpoints:
        """Start whatever is not running yet and wait until every server is healthy.

        ``on_step`` hears what it is doing; ``on_change`` what it changed on the
        machine outside Fusion's directories (see :meth:`LocalElasticsearch.start`).
        ``cdc_ports`` (PostgreSQL's, Connect's) start the CDC servers too (:mod:`.cdc`);
        ``registry_port`` a schema registry, ``prometheus`` (port, scraping) a Prometheus.
        """
        java_home()
        check_state(self.state_dir, self._read_state(), self.es_version, self.secure)
        for name in self.cache.missing():
            on_step(f"{preparing(name)} (first run only)")
            self.cache.fetch(name)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.secure:
            ensure_material(self.state_dir / "secure")
        state = self._read_state()
        state["secure"] = self.secure
        kafka, es = self.kafka(), self.elasticsearch()
        started: list[Started] = []
        try:
            if not reuse(kafka, state.get("kafka"), kafka_port, "--kafka-port"):
                on_step(f"starting Kafka {KAFKA_VERSION} on 127.0.0.1:{kafka_port}")
                ports = KafkaPorts(kafka_port, companion_port(kafka_port, 1))
                kafka.start(ports)
                started.append(kafka)
                state["kafka"] = {"port": ports.broker, "controller_port": ports.controller}
            if not reuse(es, state.get("elasticsearch"), es_port, "--es-port"):
                on_step(f"starting Elasticsearch {self.es_version} on 127.0.0.1:{es_port}")
                es_ports = ElasticsearchPorts(es_port, companion_port(es_port, 100))
                es.start(es_ports, on_change)
                started.append(es)
                state["elasticsearch"] = {
                    "port": es_ports.http,
                    "transport_port": es_ports.transport,
                    "version": self.es_version,
                }
            if spark_workers:
                at_spark = (state, spark_workers, spark_port, on_step)
                cluster = start_cluster(self.state_dir, *at_spark, self.jvm_options)
                started.append(cluster)
            self._write_state(state)
            endpoints = self._endpoints(state)
            on_step("waiting for the servers to become healthy")
            checks = {"kafka": (partial(kafka.healthy, endpoints.kafka_bootstrap), kafka.process)}
            checks["elasticsearch"] = (partial(es.healthy, endpoints.es_url), es.process)
            wait_healthy(checks, timeout)
            if spark_workers:
                wait_until_alive(cluster, state["spark"]["ui_port"], timeout)
            if cdc_ports:  # after Kafka is healthy: the Connect worker needs it to start
                at = (endpoints.kafka_bootstrap, cdc_ports, on_step, on_change, self.jvm_options)
                started += start_cdc(self.state_dir, self.cache.root, state, *at)
                self._write_state(state)
                wait_cdc(state, self.state_dir, self.cache.root, timeout)
            if registry_port:
                at_port = (state, registry_port, on_step, timeout, self.jvm_options)
                started += apicurio.start_registry(self.cache.root, self.state_dir, *at_port)
                self._write_state(state)
            if prometheus:
                started += start_prometheus(self.state_dir, state, *prometheus, on_step, timeout)
                self._write_state(state)
            if self.material is not None:
                write_env(self.material, endpoints.kafka_bootstrap, endpoints.es_url)
        except BaseException:
            for service in started:
                service.stop() if isinstance(service, LocalSparkCluster) else service.process.stop()
            raise
        return self._endpoints(state, with_es_version=True)

    def down(self, purge: bool = False) -> None:
        """Stop every server (nothing of ours keeps running); with ``purge``, delete their data."""
        self.spark().stop()
        for service in [*self.services(), *self.cdc_services(), *self.extras()]:
            service.process.stop()
        state = self._read_state()
        stopped = [state.pop(name, None) for name in OPT_IN]
        if any(stopped) and self.state_dir.is_dir():
            self._write_state(state)
        if purge:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def status(self) -> list[ServiceStatus]:
        state = self._read_state()
        port = {name: state.get(name, {}).get("port") for name in ("kafka", "elasticsearch")}
        result = [main_status(s, port[s.name], KAFKA_VERSION) for s in self.services()]
        if spark := state.get("spark"):
            result.append(spark_status(self.spark(), spark))
        result += cdc_status(self.state_dir, self.cache.root, state)
        return result + [e.status(state[e.name]["port"]) for e in self.extras()]

    def extras(self) -> list[Extra]:
        """The registry and Prometheus an earlier ``up`` started (none without their options)."""
        state = self._read_state()
        registry = apicurio.recorded_registry(self.cache.root, self.state_dir, state)
        return [*registry, *recorded_prometheus(self.state_dir, state)]

    def cdc_ports(self) -> tuple[int, int]:
        return recorded_ports(self._read_state())

    def cdc_services(self) -> list[CdcService]:
        return cdc_services(self.state_dir, self.cache.root, self._read_state())

    def log_file(self, service: Service) -> Path:
        if service == "spark":
            return self.spark().master.log_file
        return (self.kafka() if service == "kafka" else self.elasticsearch()).process.log_file

    def endpoints(self) -> Endpoints:
        """Endpoints of the servers recorded by the last ``up``."""
        return self._endpoints(self._read_state(), with_es_version=True)

    def services(self) -> list[LocalKafka | LocalElasticsearch]:
        kafka = [self.kafka()] if self.cache.kafka_dir.is_dir() else []
        es = [self.elasticsearch()] if self.cache.elasticsearch_dir.is_dir() else []
        return [*kafka, *es]

    def _endpoints(self, state: dict[str, Any], with_es_version: bool = False) -> Endpoints:
        if "kafka" not in state or "elasticsearch" not in state:
            raise InfraError("the local runtime is not set up: run `fusion infra up` first")
        scheme = "https" if self.secure else "http"
        es_url = f"{scheme}://127.0.0.1:{state['elasticsearch']['port']}"
        spark = state.get("spark")
        material = self.material
        return Endpoints(
            kafka_bootstrap=f"127.0.0.1:{state['kafka']['port']}",
            es_url=es_url,
            kafka_version=KAFKA_VERSION,
            es_version=(es_version_at(es_url, material) if with_es_version else None) or "unknown",
            spark_master=f"spark://127.0.0.1:{spark['port']}" if spark else None,
            env_file=str(material.env_file) if material is not None else None,
            cdc=cdc_urls(state),
            registry=apicurio.url_of(state),
            prometheus=prometheus_url_of(state),
        )

    def _read_state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return state

    def _write_state(self, state: dict[str, Any]) -> None:
        self.state_file.write_text(json.dumps(state, indent=2))
