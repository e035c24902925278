"""`fusion infra up --registry`: a schema registry beside Kafka, Apicurio Registry 3.0.9.

Avro topics carry each record's writer schema as an id in a registry (the
Confluent wire format). Apicurio Registry speaks the Confluent-compatible API
(``/apis/ccompat/v7``) that confluent-kafka's ``SchemaRegistryClient`` and
Debezium's Avro converter use. 3.0.9 is the last release that runs on Java 17
(3.1 needs 21); Maven Central publishes it whole (``apicurio-registry-app``,
classifier ``all``, a ``tar.gz`` of a Quarkus application), started with its
``-runner.jar``. Its storage is in memory: a registry started again has
forgotten its schemas, as a test session's should. Opt-in, as the CDC
servers are: recorded in ``runtime.json`` (``registry``), stopped by ``down``.
"""

from __future__ import annotations

import json
import os
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from fusion.infra import (
    Coordinate,
    ManagedProcess,
    ServiceStatus,
    java_home,
    maven_file,
    reuse,
    staging,
    wait_healthy,
)

REGISTRY_VERSION = "3.0.9"
APICURIO = Coordinate(
    "io.apicurio", "apicurio-registry-app", REGISTRY_VERSION, "tar.gz", classifier="all"
)
# The Confluent-compatible API, where clients point their schema.registry.url.
CCOMPAT = "/apis/ccompat/v7"


def registry_dir(artifacts: Path) -> Path:
    return artifacts / f"apicurio-registry-{REGISTRY_VERSION}"


def fetch_registry(artifacts: Path) -> Path:
    """The registry's runner jar, fetched with Maven and unpacked on first use."""
    target = registry_dir(artifacts)
    if not target.is_dir():
        with staging(target) as building:
            maven_file(APICURIO, building / "download")  # its parent POM is not served
            archive = next((building / "download").glob("*.tar.gz"))
            with tarfile.open(archive) as packed:
                packed.extractall(building / "dist", filter="data")
            archive.unlink()
    return runner_jar(target)


def runner_jar(unpacked: Path) -> Path:
    found = sorted(unpacked.rglob("*-runner.jar"))
    if not found:
        raise FileNotFoundError(f"no *-runner.jar in {unpacked}: delete it to fetch it again")
    return found[0]


class LocalRegistry:
    """One Apicurio Registry, in memory, its log and pid under ``<state_dir>/registry``."""

    name = "registry"

    def __init__(
        self, runner: Path, state_dir: Path, heap: str = "384m", jvm_options: Sequence[str] = ()
    ) -> None:
        self.runner = runner
        self.dir = state_dir / "registry"
        self.heap = heap
        self.jvm_options = tuple(jvm_options)
        self.process = ManagedProcess(
            "registry",
            self.dir / "registry.pid",
            self.dir / "registry.log",
            marker="apicurio-registry-app",
        )

    def start(self, port: int) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JAVA_HOME": str(java_home())}
        # The fast-jar layout finds its libraries beside the runner jar.
        self.process.start(self.command(port), env, cwd=self.runner.parent)

    def command(self, port: int) -> list[str]:
        return [
            str(java_home() / "bin" / "java"),
            f"-Xmx{self.heap}",
            *self.jvm_options,
            f"-Dquarkus.http.port={port}",
            "-Dquarkus.http.host=127.0.0.1",
            # Its own log only: no usage reports, no banner.
            "-Dquarkus.banner.enabled=false",
            "-jar",
            str(self.runner),
        ]

    def healthy(self, port: int) -> bool:
        """True once the Confluent-compatible API answers with its list of subjects."""
        try:
            subjects = call(registry_url(port), "GET", "/subjects")
        except (OSError, ValueError):
            return False
        return isinstance(subjects, list)

    def status(self, port: int) -> ServiceStatus:
        pid = self.process.pid()
        healthy = pid is not None and self.healthy(port)
        version = f"Apicurio Registry {REGISTRY_VERSION}"
        return ServiceStatus(self.name, pid is not None, healthy, registry_url(port), version, pid)


def url_of(state: dict[str, Any]) -> str | None:
    """The URL of the registry ``up --registry`` recorded in ``state``, if it did."""
    return registry_url(state["registry"]["port"]) if "registry" in state else None


def registry_url(port: int) -> str:
    """What a client sets as ``schema.registry.url``."""
    return f"http://127.0.0.1:{port}{CCOMPAT}"


def call(url: str, method: str, path: str, body: Any = None) -> Any:
    """One call to the Confluent-compatible API; its JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"null")


def start_registry(
    artifacts: Path,
    state_dir: Path,
    state: dict[str, Any],
    port: int,
    on_step: Callable[[str], None],
    timeout: float,
    jvm_options: Sequence[str] = (),
) -> list[LocalRegistry]:
    """Start the registry unless it runs; record it in ``state``; wait until it answers."""
    on_step(f"fetching Apicurio Registry {REGISTRY_VERSION}")
    registry = LocalRegistry(fetch_registry(artifacts), state_dir, jvm_options=jvm_options)
    if reuse(registry, state.get(registry.name), port, "--registry-port"):
        return []
    on_step(f"starting a schema registry (Apicurio {REGISTRY_VERSION}) on {registry_url(port)}")
    registry.start(port)
    state[registry.name] = {"port": port}
    try:
        wait_healthy({registry.name: (partial(registry.healthy, port), registry.process)}, timeout)
    except BaseException:
        registry.process.stop()
        raise
    return [registry]


def recorded_registry(
    artifacts: Path, state_dir: Path, state: dict[str, Any]
) -> list[LocalRegistry]:
    """The registry an earlier ``up --registry`` recorded (none without one)."""
    if "registry" not in state or not registry_dir(artifacts).is_dir():
        return []
    return [LocalRegistry(runner_jar(registry_dir(artifacts)), state_dir)]
