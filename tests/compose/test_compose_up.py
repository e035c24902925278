"""`docker compose up` runs the whole pipeline on a Spark cluster, on a real Docker engine.

`make test-compose` runs this file. It takes the Docker engine that answers,
or starts a private one under FUSION_HOME (stopped at the end); builds the
offline images (`fusion infra images`: a debootstrap base, then
Dockerfile.offline); and brings up docker-compose.yml with
docker-compose.offline.yml on ports of its own: Kafka and Elasticsearch from
Maven Central artifacts, a Spark master with two workers, the generator, and
the indexers, counter and enricher each submitted to the master. From the
host it then checks that:

- the master's JSON shows executors on both workers while the components run;
- the project's Prometheus scrapes the three components, each query running,
  with Fusion's alert rules loaded;
- with one worker container and the counter's container killed mid-run (a
  second wave of keys produced from the host just before), the enriched
  index ends equal to the expected join of both waves, and the ready topic
  holds one event per key: no key lost, none fired twice;

and takes the project down with its volumes, whatever happened.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.machine.ports import free_port
from fusion.core.settings import RuntimeSettings
from fusion.infra.containers import engine as docker
from fusion.infra.containers.compose import Project
from fusion.infra.errors import ServiceNotHealthyError
from tests.integration.pipelines import assert_exact_join

ROOT = Path(__file__).resolve().parents[2]
FILES = (ROOT / "docker-compose.yml", ROOT / "docker-compose.offline.yml")
KEYS = 1_500  # the generator's wave, in the compose project
WAVE2 = 500  # produced from the host right before the kills
DEADLINE = float(os.environ.get("FUSION_COMPOSE_TEST_TIMEOUT", "900"))
# Every JVM of the project on the C1 compiler, as the integration tests' servers are
# (tests/integration/conftest.py): a dozen JVMs live minutes here, on two cores.
JVM_OPTIONS = os.environ.get("FUSION_RUNTIME_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")
SPARK_SERVICES = (
    "spark-master",
    "spark-worker-1",
    "spark-worker-2",
    "indexers",
    "counter",
    "enricher",
)


def _jvm_override(path: Path) -> Path:
    """A compose file giving the servers (their scripts) and Spark's JVMs the options."""
    services: dict[str, Any] = {
        name: {"environment": {"FUSION_RUNTIME_JVM_OPTIONS": JVM_OPTIONS}}
        for name in ("kafka", "elasticsearch")
    }
    # Spark's launcher and the executors a worker starts inherit it (docker/ has no script).
    services |= {
        name: {"environment": {"JAVA_TOOL_OPTIONS": JVM_OPTIONS}} for name in SPARK_SERVICES
    }
    path.write_text(json.dumps({"services": services}))  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def engine() -> Iterator[docker.Engine]:
    home = RuntimeSettings.model_validate(
        {"home": os.environ.get("FUSION_HOME", "~/.cache/fusion")}
    ).home
    ours = not docker.answers(os.environ.get("DOCKER_HOST"))
    ours = ours and not docker.answers(docker.private_host(home)[1])
    found = docker.find_or_start(home)
    try:
        docker.build_images(found, ROOT, home / "logs" / "images")
        yield found
    finally:
        if ours:
            docker.stop(found)


@pytest.fixture(scope="module")
def project(
    engine: docker.Engine, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Project, dict[str, int]]]:
    jvm = _jvm_override(tmp_path_factory.mktemp("compose") / "jvm.yml")
    ports = {name: free_port() for name in ("KAFKA", "ES", "SPARK", "SPARK_UI", "PROMETHEUS")}
    env = {f"FUSION_COMPOSE_{name}_PORT": str(port) for name, port in ports.items()}
    env["FUSION_COMPOSE_KEYS"] = str(KEYS)
    up = Project(
        engine,
        f"fusion-test-{uuid.uuid4().hex[:8]}",
        (*FILES, jvm),
        env,
        one_shots=frozenset({"fusion-check", "generator"}),
    )
    up.up(timeout=DEADLINE)
    try:
        yield up, ports
    finally:
        up.down()


def _host_config(ports: dict[str, int]) -> PipelineConfig:
    env = {
        "FUSION_KAFKA_BOOTSTRAP": f"127.0.0.1:{ports['KAFKA']}",
        "FUSION_ES_URL": f"http://127.0.0.1:{ports['ES']}",
    }
    return PipelineConfig.load(ROOT / "examples/healthcare-components.toml", env=env)


def _expected_from_generator(up: Project, tmp: Path) -> dict[str, dict[str, Any]]:
    target = tmp / "expected.jsonl"
    up.engine.docker("cp", f"{up.name}-generator-1:/tmp/healthcare-expected.jsonl", str(target))
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    return {line["key"]: line["doc"] for line in lines if line["complete"]}


def _master(ports: dict[str, int]) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ports['SPARK_UI']}/json/", timeout=10) as r:
        state: dict[str, Any] = json.load(r)
    return state


def _wait(condition: Any, what: str, up: Project, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            states = {s.name: (s.state, s.exit_code) for s in up.services()}
            logs = {name: up.logs(name, 30) for name in ("indexers", "counter", "enricher")}
            pytest.fail(f"{what}: not within {timeout:.0f} s; services {states}; logs {logs}")
        time.sleep(0.5)


def _prometheus(ports: dict[str, int], path: str, query: str = "") -> Any:
    """One call to the project's Prometheus HTTP API: its ``data``."""
    url = f"http://127.0.0.1:{ports['PROMETHEUS']}{path}"
    if query:
        url += "?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)["data"]


def _scraped(ports: dict[str, int]) -> dict[str, float]:
    """Each component's instance and its one query's fusion_query_up."""
    found = _prometheus(ports, "/api/v1/query", 'fusion_query_up and on(instance) up{job="fusion"}')
    return {s["metric"]["instance"]: float(s["value"][1]) for s in found["result"]}


def _inspect(up: Project, container: str, template: str) -> str:
    return up.engine.docker("inspect", "--format", template, container).stdout.strip()


def _enriched_count(config: PipelineConfig) -> int:
    from fusion.elastic import client as es_client

    es = es_client.connect(config.elasticsearch)
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index)
    return int(found.get("count", 0))


def test_compose_runs_the_pipeline_on_both_workers_exactly_once_through_kills(
    project: tuple[Project, dict[str, int]], tmp_path: Path
) -> None:
    up, ports = project
    config = _host_config(ports)
    expected = _expected_from_generator(up, tmp_path)
    assert len(expected) > KEYS * 0.9

    # The components run: keys are being enriched, on executors of both workers.
    _wait(lambda: _enriched_count(config) > 0, "a first enriched document", up)
    workers = _master(ports)["workers"]
    alive = [w for w in workers if w["state"] == "ALIVE"]
    assert len(alive) == 2, workers
    assert all(w["coresused"] > 0 for w in alive), f"a worker runs no executor: {workers}"
    assert len(_master(ports)["activeapps"]) == 3

    # Prometheus scrapes each component's driver, and evaluates the alerts that ship.
    components = {f"{name}:9464": 1.0 for name in ("indexers", "counter", "enricher")}
    _wait(lambda: _scraped(ports) == components, "Prometheus scraping each component", up)
    groups = _prometheus(ports, "/api/v1/rules")["groups"]
    assert "FusionQueryStopped" in {rule["name"] for group in groups for rule in group["rules"]}

    # A second wave from the host, then a worker and the counter die mid-run.
    wave2 = build_dataset(config, GenOptions(keys=WAVE2, seed=7, key_prefix="W"))
    produce(config, wave2.records)
    # The counter dies as a crash or the OOM killer would end it (SIGKILL from outside,
    # not `docker kill`, which Docker counts as a manual stop): `restart: on-failure`
    # brings it back, and it resumes from its checkpoint. The worker is killed and
    # started again by hand: workers have no restart policy.
    counter = f"{up.name}-counter-1"
    os.kill(int(_inspect(up, counter, "{{.State.Pid}}")), signal.SIGKILL)
    up.engine.docker("kill", f"{up.name}-spark-worker-2-1")
    up.compose("up", "--detach", "--no-build", "--no-deps", "spark-worker-2")
    _wait(lambda: int(_inspect(up, counter, "{{.RestartCount}}")) >= 1, "counter restarted", up)

    want = {**expected, **wave2.expected}
    _wait(lambda: _enriched_count(config) >= len(want), f"{len(want)} enriched documents", up)

    # Every complete key of both waves fired once, enriched once, equal to the join.
    assert_exact_join(config, config, want)


def test_a_service_that_never_becomes_healthy_is_named_with_its_log_and_taken_down(
    engine: docker.Engine, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "services:\n"
        "  elasticsearch:\n"
        "    healthcheck:\n"
        '      test: ["CMD", "false"]\n'
        "      interval: 1s\n"
        "      retries: 2\n"
    )
    ports = {f"FUSION_COMPOSE_{name}_PORT": str(free_port()) for name in ("KAFKA", "ES")}
    name = f"fusion-broken-{uuid.uuid4().hex[:8]}"
    project = Project(engine, name, (*FILES, broken), ports)
    with pytest.raises(ServiceNotHealthyError) as failed:
        project.up(timeout=300)
    assert failed.value.service == "elasticsearch"
    assert failed.value.log_tail.strip(), "its last log lines"
    left = engine.docker(
        "ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={name}"
    )
    assert left.stdout.strip() == "", "docker compose down ran"
