"""What a local server is to the launcher: its name, address, version and health.

Also the rules for starting one: reuse a server an earlier ``up`` left
running on the same port, refuse a port someone else holds, and pick the
conventional second port (9093 beside 9092) when it is free.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from fusion.core.machine import free_port, port_is_free, procfs
from fusion.infra.elasticsearch import get_json
from fusion.infra.errors import InfraError, PortInUseError, ServerStartError
from fusion.infra.process import ManagedProcess
from fusion.infra.secure import SecureMaterial

Service = Literal["kafka", "elasticsearch", "spark"]
SERVICES: tuple[Service, ...] = ("kafka", "elasticsearch", "spark")


@dataclass(frozen=True)
class Endpoints:
    """Where the running servers answer, and what they are."""

    kafka_bootstrap: str
    es_url: str
    kafka_version: str
    es_version: str
    spark_master: str | None = None  # spark://127.0.0.1:<port> when workers were started
    env_file: str | None = None  # a secured runtime's settings for Fusion (`source` it)
    cdc: tuple[str | None, str | None] = (None, None)  # PostgreSQL's URL, Connect's (`--cdc`)
    registry: str | None = None  # the schema registry's Confluent-compatible URL (`--registry`)
    prometheus: str | None = None  # `--prometheus`: its address


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    running: bool
    healthy: bool
    address: str | None
    version: str | None
    pid: int | None


class Server(Protocol):  # what the launcher needs of a local server
    name: str
    process: ManagedProcess


def _freed(port: int, seconds: float = 15.0) -> bool:
    """Whether ``port`` frees within ``seconds``: a server stopped a moment ago (its process
    gone) was once seen to hold its port a little longer."""
    deadline = time.monotonic() + seconds
    while not port_is_free(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def reuse(
    service: Server,
    recorded: dict[str, Any] | None,
    port: int,
    option: str,
) -> bool:
    """True if ``service`` already runs on ``port``; an error if it runs elsewhere."""
    if not service.process.is_running():
        # Its own port, from its last run: wait a moment for the stopped server to let go.
        own = (recorded or {}).get("port") == port
        if not port_is_free(port) and not (own and _freed(port)):
            raise PortInUseError(service.name, port, option)
        return False
    running_port = (recorded or {}).get("port")
    if running_port != port:
        raise InfraError(
            f"{service.name} already runs on port {running_port} from an earlier "
            f"`fusion infra up`; run `fusion infra down` first to move it to {port}"
        )
    return True


def companion_port(port: int, offset: int) -> int:
    """The conventional second port (9093 next to 9092, 9300 next to 9200), or any free one."""
    candidate = port + offset
    if candidate <= 65535 and port_is_free(candidate):
        return candidate
    return free_port()


def spark_version() -> str:
    import pyspark

    return f"Spark {pyspark.__version__}"


def es_version_at(url: str, secure: SecureMaterial | None = None) -> str | None:
    # Not `GET /`: integ-test-zip nodes from 8.9 on answer it with 405.
    try:
        info = get_json(f"{url}/_nodes/_local?filter_path=nodes.*.version", secure=secure)
    except (OSError, ValueError):
        return None
    nodes = info.get("nodes")
    if not isinstance(nodes, dict) or not nodes:
        return None
    node = next(iter(nodes.values()))
    return str(node.get("version")) if isinstance(node, dict) else None


def broker_version(pid: int) -> str | None:
    """The version of the Kafka broker running as ``pid``: its ``kafka-server`` jar's.

    A broker does not tell its version over the protocol; the process it runs
    as does, by the jars on its class path (a Kafka distribution's ``libs``).
    """
    command = procfs.cmdline(pid)
    if command is None:
        return None
    args = [arg.decode(errors="replace") for arg in command]
    for entry in (part for arg in args for part in arg.split(":")):
        folder = Path(entry.removesuffix("*")).expanduser()
        for jar in folder.glob("kafka-server-*.jar") if folder.is_dir() else ():
            version = jar.name.removeprefix("kafka-server-").removesuffix(".jar")
            if version[:1].isdigit() and not version.endswith(("-test", "-sources")):
                return version
    return None


def local_broker_version(bootstrap: str) -> str | None:
    """The version of the broker on this machine that listens on ``bootstrap``'s port, if any."""
    port = bootstrap.split(",")[0].rsplit(":", 1)[-1]
    for pid in procfs.pids():
        args = [arg.decode(errors="replace") for arg in procfs.cmdline(pid) or []]
        if "kafka.Kafka" not in args:
            continue
        following = args[args.index("kafka.Kafka") + 1 :]
        try:
            text = Path(following[0]).read_text() if following and following[0] else ""
        except OSError:
            text = ""
        if f":{port}" in text:
            return broker_version(pid)
    return None


def check_state(state_dir: Path, state: dict[str, Any], es_version: str, secure: bool) -> None:
    """One line, not a server that dies at start, when the data under ``state_dir`` cannot serve.

    Data another Elasticsearch major wrote, or a runtime set up plain that is
    now started secured (or the reverse).
    """
    recorded = state.get("elasticsearch", {}).get("version")
    if recorded and recorded.split(".")[0] != es_version.split(".")[0]:
        raise InfraError(
            f"the local Elasticsearch data under {state_dir} was written by "
            f"Elasticsearch {recorded}; run `fusion infra down --purge` before starting "
            f"{es_version}, or start {recorded} (--es-version {recorded})"
        )
    was_secure = bool(state.get("secure", False))  # older runtimes: plain
    has_data = (state_dir / "kafka").exists() or (state_dir / "elasticsearch").exists()
    if was_secure != secure and has_data:
        was, now = ("secured", "plain") if was_secure else ("plain", "secured")
        raise InfraError(
            f"the local runtime under {state_dir} was set up {was}; run "
            f"`fusion infra down --purge` before starting it {now}"
        )


def wait_healthy(
    servers: Mapping[str, tuple[Callable[[], bool], ManagedProcess]], timeout: float
) -> None:
    """Until each server's check passes; one that exits, or is not healthy by ``timeout``
    seconds, is an error with its log's tail."""
    deadline = time.monotonic() + timeout
    pending = dict(servers)
    while pending:
        for name, (healthy, process) in list(pending.items()):
            if healthy():
                del pending[name]
            elif not process.is_running():
                ended = process.ended()
                reason = f"its process exited{f' ({ended})' if ended else ''}"
                raise ServerStartError(name, reason, process.log_tail())
        if pending and time.monotonic() > deadline:
            name, (_, process) = next(iter(pending.items()))
            raise ServerStartError(name, f"not healthy after {timeout:.0f} s", process.log_tail())
        if pending:
            time.sleep(0.5)


class MainServer(Server, Protocol):  # Kafka, Elasticsearch
    def healthy(self, address: str) -> bool: ...


def main_status(service: MainServer, port: int | None, kafka_version: str) -> ServiceStatus:
    """What ``fusion infra status`` says of Kafka or Elasticsearch (``port`` None: never up)."""
    pid, is_kafka = service.process.pid(), service.name == "kafka"
    address, healthy, version = None, False, None
    if port is not None:
        address = f"127.0.0.1:{port}" if is_kafka else f"http://127.0.0.1:{port}"
        healthy = pid is not None and service.healthy(address)
        if healthy:
            version = kafka_version if is_kafka else es_version_at(address)
    return ServiceStatus(service.name, pid is not None, healthy, address, version, pid)
