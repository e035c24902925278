"""Session-wide real servers for the integration tests.

One Kafka broker, one Elasticsearch node and one SparkSession serve the whole
test session; each test gets its own uuid-named topics and indexes and cleans
them up. Where the servers come from, in order of preference:

1. ``FUSION_TEST_KAFKA_BOOTSTRAP`` + ``FUSION_TEST_ES_URL``: servers you run already;
2. testcontainers, when a Docker engine answers;
3. the local launcher (`fusion infra`), on free ports, in a throwaway state directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from confluent_kafka.cimpl import NewTopic
from elasticsearch import Elasticsearch

from fusion.core.machine.ports import free_port
from fusion.core.settings import ElasticsearchSettings, RuntimeSettings, Settings
from fusion.elastic import client as es_client
from fusion.infra.cdc.postgres import LocalPostgres
from fusion.infra.cdc.servers import start_cdc, wait_cdc
from fusion.infra.errors import ServerStartError
from fusion.infra.prometheus import Scraping, start_prometheus
from fusion.infra.registry.apicurio import registry_url, start_registry
from fusion.infra.runtime import LocalRuntime
from fusion.infra.services import Endpoints
from fusion.infra.spark import class_archive
from fusion.infra.spark.standalone import LocalSparkCluster, SparkPorts
from fusion.kafka import client as kafka_client
from fusion.ops import ALERT_RULES
from fusion.spark.session import spark_session
from tests.integration.shared import exclusive, run_directory, shared

T = TypeVar("T")

log = logging.getLogger("fusion.tests")

# Every Spark driver the tests start (the session they share, each `fusion run` process)
# lives seconds to minutes on a few hundred records, on two cores that two pytest workers'
# servers share too: the C2 compiler's work would never pay for itself there. Spark's
# launcher adds SPARK_SUBMIT_OPTS to each driver's java command; a value you set wins.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")
# The servers too (Kafka, Elasticsearch, Connect, the registry, the Spark cluster), whether
# started here or by a `fusion infra up` a test runs: Elasticsearch starts on a third less
# CPU and serves a test's light load on half as much (docs/configuration.md, [runtime]).
os.environ.setdefault("FUSION_RUNTIME_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")


def server_jvm_options() -> list[str]:
    """The options of every server JVM the tests start (FUSION_RUNTIME_JVM_OPTIONS)."""
    return shlex.split(os.environ["FUSION_RUNTIME_JVM_OPTIONS"])


KAFKA_IMAGE = "confluentinc/cp-kafka:7.9.0"
SERVER_LINES: list[str] = []  # repeated in the terminal summary, see tests/conftest.py
# (guarantee, why) for every test that could not check its guarantee: printed at the end.
UNCHECKED: list[tuple[str, str]] = []
ES_VERSION_ENV = "FUSION_TEST_ES_VERSION"  # `make test-es9` sets it
ES_IMAGE = f"elasticsearch:{os.environ.get(ES_VERSION_ENV, '8.19.21')}"


def _docker_available() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


# Where no image can be pulled: Fusion's offline project image (`fusion infra images`),
# which runs Kafka and Elasticsearch from Maven Central artifacts (`make test-containers`).
OFFLINE_IMAGE_ENV = "FUSION_TEST_IMAGE"


Containers = dict[str, Any]  # "kafka" and "elasticsearch": testcontainers' handles


@contextlib.contextmanager
def _containers() -> Iterator[tuple[Endpoints, Containers]]:
    if os.environ.get(OFFLINE_IMAGE_ENV):
        with _offline_containers(os.environ[OFFLINE_IMAGE_ENV]) as started:
            yield started
        return
    from testcontainers.community.elasticsearch import ElasticSearchContainer
    from testcontainers.community.kafka import KafkaContainer

    kafka = (
        KafkaContainer(KAFKA_IMAGE)
        .with_kraft()
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    )
    es = ElasticSearchContainer(ES_IMAGE, mem_limit="1g").with_env(
        "ES_JAVA_OPTS", "-Xms512m -Xmx512m"
    )
    with kafka, es:
        es_url = es.get_url()
        endpoints = Endpoints(
            kafka.get_bootstrap_server(), es_url, KAFKA_IMAGE, _es_version(es_url)
        )
        yield endpoints, {"kafka": kafka, "elasticsearch": es}


@contextlib.contextmanager
def _offline_containers(image: str) -> Iterator[tuple[Endpoints, Containers]]:
    """Kafka and Elasticsearch as containers of ``image`` (docker/kafka.sh, elasticsearch.sh).

    Each listens on a host port chosen first: Kafka advertises its host port,
    which must be known before the broker starts.
    """
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

    kafka_port, es_port = free_port(), free_port()
    advertised = f"INTERNAL://localhost:29092,HOST://127.0.0.1:{kafka_port}"
    # A network of their own: an engine may have no default bridge (`fusion infra docker`).
    network = Network()
    kafka = (
        DockerContainer(image)
        .with_command("kafka.sh")
        .with_env("FUSION_KAFKA_ADVERTISED", advertised)
        .with_env("FUSION_RUNTIME_JVM_OPTIONS", os.environ["FUSION_RUNTIME_JVM_OPTIONS"])
        .with_bind_ports(9092, kafka_port)
        .with_network(network)
    )
    es = (
        DockerContainer(image)
        .with_command("elasticsearch.sh")
        .with_env("FUSION_RUNTIME_JVM_OPTIONS", os.environ["FUSION_RUNTIME_JVM_OPTIONS"])
        .with_bind_ports(9200, es_port)
        .with_network(network)
    )
    with network, kafka, es:
        bootstrap, es_url = f"127.0.0.1:{kafka_port}", f"http://127.0.0.1:{es_port}"
        _wait_until(lambda: _kafka_answers(bootstrap), "Kafka in a container", kafka)
        _wait_until(lambda: _es_answers(es_url), "Elasticsearch in a container", es)
        endpoints = Endpoints(bootstrap, es_url, f"{image} (kafka.sh)", _es_version(es_url))
        yield endpoints, {"kafka": kafka, "elasticsearch": es}


def _wait_until(answers: Callable[[], bool], what: str, container: Any) -> None:
    deadline = time.monotonic() + 180
    while not answers():
        if time.monotonic() > deadline:
            logs = container.get_wrapped_container().logs(tail=20).decode(errors="replace")
            raise RuntimeError(f"{what} did not answer in 180 s; its last log lines:\n{logs}")
        time.sleep(1)


def _kafka_answers(bootstrap: str) -> bool:
    from confluent_kafka.admin import AdminClient

    try:
        return bool(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=3).brokers)
    except Exception:
        return False


def _es_answers(url: str) -> bool:
    try:
        _es_version(url)
    except Exception:
        return False
    return True


Service = Literal["kafka", "elasticsearch"]


class ServerControl:
    """A Kafka and an Elasticsearch of one test file's own, which its tests take down and
    bring back (the session's are shared by the tests running beside it).

    - local launcher: the server's processes are stopped, and started again on
      the same ports with the same data;
    - testcontainers: the container is paused and unpaused (its mapped ports
      stay the same, and clients meet a server that stopped answering);
    - external servers (``FUSION_TEST_*``): they are not ours to stop. The test
      is skipped and its guarantee listed as UNCHECKED at the end of the run.
    """

    def __init__(
        self, runtime: LocalRuntime | None, containers: Containers, endpoints: Endpoints
    ) -> None:
        self.runtime = runtime
        self.containers = containers
        self.endpoints = endpoints
        self.settings = _settings(endpoints)
        self.stopped: list[Service] = []
        # A stopped process refuses connections; a paused container accepts them and
        # answers nothing until it is unpaused.
        self.refuses = runtime is not None

    def require(self, guarantee: str) -> None:
        """Skip (loudly) unless this fixture mode lets a test stop the servers."""
        if self.runtime is None and not self.containers:
            reason = "the servers come from FUSION_TEST_*; Fusion cannot stop them"
            UNCHECKED.append((guarantee, reason))
            pytest.skip(f"UNCHECKED: {guarantee}: {reason}")

    def stop(self, service: Service) -> None:
        if self.runtime is not None:
            # Stop one server, keeping its data: `start` brings it back on the same port.
            for server in self.runtime.services():
                if server.name == service:
                    server.process.stop()
        else:
            self.containers[service].get_wrapped_container().pause()
        self.stopped.append(service)

    def start(self) -> None:
        """Bring back whatever :meth:`stop` took down."""
        if self.runtime is not None:
            kafka_port = int(self.endpoints.kafka_bootstrap.rsplit(":", 1)[1])
            es_port = int(self.endpoints.es_url.rsplit(":", 1)[1])
            self.runtime.up(kafka_port=kafka_port, es_port=es_port)
        else:
            for service in self.stopped:
                self.containers[service].get_wrapped_container().unpause()
        self.stopped.clear()


@contextlib.contextmanager
def _local_runtime(es_heap: str = "512m") -> Iterator[tuple[LocalRuntime, Endpoints]]:
    home = RuntimeSettings.model_validate(
        {"home": os.environ.get("FUSION_HOME", "~/.cache/fusion")}
    ).home
    # Our own state directory, so a `fusion infra up` of the user is never touched.
    state_dir = Path(tempfile.mkdtemp(prefix="test-runtime-", dir=_ensure(home)))
    # `make test-es9` runs a subset against another Elasticsearch version.
    es_version = os.environ.get(ES_VERSION_ENV)
    runtime = LocalRuntime(
        home, state_dir, es_version=es_version, es_heap=es_heap, jvm_options=server_jvm_options()
    )
    try:
        yield runtime, runtime.up(kafka_port=free_port(), es_port=free_port())
    finally:
        runtime.down()
        shutil.rmtree(state_dir, ignore_errors=True)


@contextlib.contextmanager
def _local_endpoints() -> Iterator[Endpoints]:
    # Twice the heap of a node of one worker's: both workers' tests write to this one.
    with _local_runtime(es_heap="1g") as (_, endpoints):
        yield endpoints


@contextlib.contextmanager
def _container_endpoints() -> Iterator[Endpoints]:
    with _containers() as (endpoints, _):
        yield endpoints


def _endpoints_from(value: dict[str, Any]) -> Endpoints:
    return Endpoints(**{**value, "cdc": tuple(value["cdc"])})


def _es_version(url: str) -> str:
    return es_client.check(ElasticsearchSettings(url=url))


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _external() -> Endpoints | None:
    kafka, es_url = (
        os.environ.get("FUSION_TEST_KAFKA_BOOTSTRAP"),
        os.environ.get("FUSION_TEST_ES_URL"),
    )
    if kafka and es_url:
        return Endpoints(kafka, es_url, "external", _es_version(es_url))
    return None


def _announce(request: pytest.FixtureRequest, what: str, how: str, endpoints: Endpoints) -> None:
    line = (
        f"{what} ({how}): "
        f"Kafka {endpoints.kafka_version} at {endpoints.kafka_bootstrap}, "
        f"Elasticsearch {endpoints.es_version} at {endpoints.es_url}"
    )
    log.info(line)
    SERVER_LINES.append(line)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n" + line)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The directory the pytest-xdist workers of this run share (None without xdist)."""
    return run_directory(tmp_path_factory.getbasetemp())


@pytest.fixture
def cluster_settings(run_dir: Path | None) -> Iterator[None]:
    """For a test that changes a cluster-wide setting of the shared Elasticsearch: no test
    of another worker changes one meanwhile (each puts back what it changed)."""
    with exclusive("elasticsearch-cluster-settings", run_dir):
        yield


@pytest.fixture(scope="session")
def servers(request: pytest.FixtureRequest, run_dir: Path | None) -> Iterator[Endpoints]:
    external = _external()
    if external is not None:
        source: contextlib.AbstractContextManager[Endpoints] = contextlib.nullcontext(external)
        how = "external servers"
    elif _docker_available():
        source, how = _container_endpoints(), "testcontainers"
    else:
        source = shared("servers", run_dir, _local_endpoints, asdict, _endpoints_from)
        how = "local launcher (fusion infra), shared by the workers"
    with source as endpoints:
        _announce(request, "integration servers", how, endpoints)
        yield endpoints


@pytest.fixture(scope="module")
def server_control(request: pytest.FixtureRequest) -> Iterator[ServerControl]:
    """Servers of this test file's own, for tests that take them down (see ServerControl)."""
    external = _external()
    if external is not None:
        yield ServerControl(None, {}, external)
    elif _docker_available():
        with _containers() as (endpoints, containers):
            _announce(request, "servers to stop", "testcontainers", endpoints)
            yield ServerControl(None, containers, endpoints)
    else:
        with _local_runtime() as (runtime, endpoints):
            _announce(request, "servers to stop", "local launcher (fusion infra)", endpoints)
            yield ServerControl(runtime, {}, endpoints)


def _settings(endpoints: Endpoints | None) -> Settings:
    env = {"FUSION_SPARK_MASTER": "local[2,4]", "FUSION_SPARK_SHUFFLE_PARTITIONS": "2"}
    if endpoints is not None:
        env.update(FUSION_KAFKA_BOOTSTRAP=endpoints.kafka_bootstrap, FUSION_ES_URL=endpoints.es_url)
    if "FUSION_HOME" in os.environ:
        env["FUSION_HOME"] = os.environ["FUSION_HOME"]
    return Settings.load(env=env)


@pytest.fixture(scope="session")
def settings(servers: Endpoints) -> Settings:
    return _settings(servers)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # It needs no server: tests that start servers of their own share it too.
    settings = _settings(None)
    # `make provision` built it already: servers started elsewhere (testcontainers) did not.
    class_archive.build(settings.runtime.home)
    session = spark_session(settings, app_name="fusion-tests")
    # "Current batch is falling behind" on 2 busy cores is expected, not news.
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def es(settings: Settings) -> Iterator[Elasticsearch]:
    client = es_client.connect(settings.elasticsearch)
    yield client
    client.close()


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_topic(settings: Settings) -> Iterator[Callable[..., str]]:
    """Create uniquely named topics for one test; delete them afterwards."""
    admin = kafka_client.admin(settings.kafka)
    created: list[str] = []

    def make(prefix: str = "t", partitions: int = 1) -> str:
        name = unique_name(prefix)
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(timeout=30)
        created.append(name)
        return name

    yield make
    if created:
        for future in admin.delete_topics(created).values():
            with contextlib.suppress(Exception):
                future.result(timeout=30)


@pytest.fixture
def make_index(es: Elasticsearch) -> Iterator[Callable[[str], str]]:
    """Unique index names for one test; whatever was created under them is deleted afterwards."""
    names: list[str] = []

    def make(prefix: str = "idx") -> str:
        names.append(unique_name(prefix))
        return names[-1]

    yield make
    for name in names:
        es.options(ignore_status=404).indices.delete(index=name)


@dataclass(frozen=True)
class Cdc:
    """PostgreSQL and a Kafka Connect worker with Debezium, started once for the session."""

    postgres: LocalPostgres
    pg_port: int
    connect_port: int

    def sql(self, statement: str) -> str:
        return self.postgres.sql(self.pg_port, statement)


@contextlib.contextmanager
def _started_once_more(home: Path, what: str, start: Callable[[Path, list[Any]], T]) -> Iterator[T]:
    """Start a session's servers in a state directory of their own, and once more if they die
    at start: the Connect worker once exited silently at start in CI (an empty log), the
    schema registry once 5 s in (its log cut short); said, with how they ended.

    ``start`` appends what it started to its list (stopped at the end, or on a failure).
    """
    for attempt in (1, 2):
        state_dir = Path(tempfile.mkdtemp(prefix=f"test-{what}-", dir=_ensure(home)))
        services: list[Any] = []
        try:
            value = start(state_dir, services)
        except ServerStartError as exc:
            _stop(services, state_dir)
            if attempt == 2:
                raise
            warnings.warn(f"the {what} servers did not start, again: {exc}", stacklevel=3)
            continue
        try:
            yield value
        finally:
            _stop(services, state_dir)
        return


def _stop(services: list[Any], state_dir: Path) -> None:
    for service in services:
        service.process.stop()
    shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def cdc(settings: Settings, run_dir: Path | None) -> Iterator[Cdc]:
    """Real change-data-capture beside the session's Kafka (whichever way that runs).

    Shared by the workers that share that Kafka (each test captures a schema of its own).
    """
    home = settings.runtime.home

    def start(state_dir: Path, services: list[Any]) -> Cdc:
        state: dict[str, Any] = {}
        ports = (free_port(), free_port())
        at = (state, settings.kafka.bootstrap, ports)
        services += start_cdc(state_dir, home / "artifacts", *at, jvm_options=server_jvm_options())
        wait_cdc(state, state_dir, home / "artifacts", timeout=180)
        return Cdc(next(s for s in services if isinstance(s, LocalPostgres)), *ports)

    def encode(cdc: Cdc) -> dict[str, Any]:
        postgres = {"state_dir": str(cdc.postgres.dir.parent), "bin": str(cdc.postgres.bin)}
        return {**postgres, "pg_port": cdc.pg_port, "connect_port": cdc.connect_port}

    def decode(value: dict[str, Any]) -> Cdc:
        postgres = LocalPostgres(Path(value["state_dir"]), Path(value["bin"]))
        return Cdc(postgres, value["pg_port"], value["connect_port"])

    started = partial(_started_once_more, home, "cdc", start)
    with shared(f"cdc {settings.kafka.bootstrap}", run_dir, started, encode, decode) as cdc:
        yield cdc


@pytest.fixture(scope="session")
def registry(settings: Settings, run_dir: Path | None) -> Iterator[str]:
    """A real schema registry (Apicurio, in memory) for the session: its Confluent API's URL.

    Shared by the workers (each test registers subjects of its own names).
    """
    home = settings.runtime.home

    def start(state_dir: Path, services: list[Any]) -> str:
        port = free_port()
        at_port = ({}, port, lambda _: None, 180, server_jvm_options())
        services += start_registry(home / "artifacts", state_dir, *at_port)
        return registry_url(port)

    started = partial(_started_once_more, home, "registry", start)
    with shared("registry", run_dir, started, lambda url: {"url": url}, itemgetter("url")) as url:
        yield url


@dataclass(frozen=True)
class Prometheus:
    """A real Prometheus with Fusion's alert rules, scraping and evaluating every second."""

    url: str
    targets: Path  # a test adds its pipeline here (fusion.infra.prometheus.add_target)


@pytest.fixture(scope="session")
def prometheus(settings: Settings, run_dir: Path | None) -> Iterator[Prometheus]:
    """Debian's Prometheus (``apt-get install prometheus``; .ci/run installs it), job
    ``fusion`` discovered from files: shared by the workers, each test with targets of its own."""

    def start(state_dir: Path, services: list[Any]) -> Prometheus:
        port, scraping = free_port(), Scraping((ALERT_RULES,), targets=(), interval_seconds=1)
        services += start_prometheus(state_dir, {}, port, scraping, lambda _: None, 60)
        return Prometheus(f"http://127.0.0.1:{port}", services[0].targets_dir)

    def encode(found: Prometheus) -> dict[str, Any]:
        return {"url": found.url, "targets": str(found.targets)}

    def decode(value: dict[str, Any]) -> Prometheus:
        return Prometheus(value["url"], Path(value["targets"]))

    started = partial(_started_once_more, settings.runtime.home, "prometheus", start)
    with shared("prometheus", run_dir, started, encode, decode) as found:
        yield found


@dataclass(frozen=True)
class SparkCluster:
    """A standalone master and its workers, started for the session from the pyspark install."""

    master: str
    worker_dirs: tuple[Path, ...]


@pytest.fixture(scope="session")
def spark_cluster(settings: Settings) -> Iterator[SparkCluster]:
    state_dir = Path(tempfile.mkdtemp(prefix="test-spark-", dir=_ensure(settings.runtime.home)))
    cluster = LocalSparkCluster(state_dir, workers=2, jvm_options=server_jvm_options())
    ports = SparkPorts(free_port(), free_port())
    try:
        cluster.start(ports)
        deadline = time.monotonic() + 120
        while not cluster.healthy(ports.master_ui):
            assert time.monotonic() < deadline, cluster.log_tail()
            time.sleep(0.5)
        yield SparkCluster(
            f"spark://127.0.0.1:{ports.master}",
            tuple(cluster.worker_dir(i) for i in (1, 2)),
        )
    finally:
        cluster.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with Fusion's dependencies but not Fusion: executors must get it shipped.

    A bare virtualenv whose one ``.pth`` line puts this environment's
    site-packages on its path. That line does not run the ``.pth`` files found
    there, so the editable install of Fusion (a path hook) does not come along.
    """
    venv = tmp_path_factory.mktemp("executor-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    target = next((venv / "lib").glob("python3*/site-packages"))
    (target / "fusion-dependencies.pth").write_text(site + "\n")
    return venv / "bin" / "python"
