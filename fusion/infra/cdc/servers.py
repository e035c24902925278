"""`fusion infra up --cdc`: PostgreSQL and a Kafka Connect worker with Debezium, beside Kafka.

Opt-in, as the Spark cluster is: started after Kafka, recorded in
``runtime.json`` (``postgres``, ``connect``), stopped by ``down``. A server
that does not start is one line naming it and its log's tail
(:class:`~fusion.infra.errors.ServerStartError`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeAlias

from fusion.infra import InfraError, ServerStartError, ServiceStatus, reuse
from fusion.infra.cdc.connect import CONNECT_VERSION, DEBEZIUM_VERSION, LocalConnect, fetch_connect
from fusion.infra.cdc.postgres import PG_DATABASE, PG_ROLE, LocalPostgres

CdcService: TypeAlias = LocalPostgres | LocalConnect


def cdc_services(state_dir: Path, artifacts: Path, state: dict[str, Any]) -> list[CdcService]:
    """The CDC servers an earlier ``up --cdc`` recorded (none without one)."""
    services: list[CdcService] = []
    if "postgres" in state:
        services.append(LocalPostgres(state_dir))
    if "connect" in state:
        services.append(LocalConnect(fetch_connect(artifacts), state_dir))
    return services


def start_cdc(
    state_dir: Path,
    artifacts: Path,
    state: dict[str, Any],
    bootstrap: str,
    ports: tuple[int, int],
    on_step: Callable[[str], None] = lambda _: None,
    on_change: Callable[[str], None] = lambda _: None,
    jvm_options: Sequence[str] = (),
) -> list[CdcService]:
    """Start PostgreSQL and the Connect worker unless running; record them in ``state``.

    ``bootstrap``: the (plain) Kafka broker the worker writes to; ``ports``:
    PostgreSQL's and Connect's REST API's.
    """
    pg_port, connect_port = ports
    if state.get("secure"):
        raise InfraError("--cdc runs beside a plain runtime only: drop --secure")
    on_step(f"fetching Kafka Connect {CONNECT_VERSION} and Debezium {DEBEZIUM_VERSION}")
    jars = fetch_connect(artifacts)
    pg, connect = LocalPostgres(state_dir), LocalConnect(jars, state_dir, jvm_options=jvm_options)
    started: list[CdcService] = []
    if not reuse(pg, state.get(pg.name), pg_port, "--pg-port"):
        on_step(f"starting PostgreSQL on 127.0.0.1:{pg_port} (wal_level = logical)")
        pg.start(pg_port, on_change)
        _wait(partial(pg.healthy, pg_port), pg, "accepting connections")
        pg.create_database(pg_port)
        state[pg.name] = {"port": pg_port}
        started.append(pg)
    if not reuse(connect, state.get(connect.name), connect_port, "--connect-port"):
        on_step(f"starting Kafka Connect with Debezium on http://127.0.0.1:{connect_port}")
        connect.start(connect_port, bootstrap)
        state[connect.name] = {"port": connect_port}
        started.append(connect)
    return started


def wait_cdc(state: dict[str, Any], state_dir: Path, artifacts: Path, timeout: float) -> None:
    """Until the Connect worker lists Debezium's connector (PostgreSQL waited at start)."""
    for service in cdc_services(state_dir, artifacts, state):
        if isinstance(service, LocalConnect):
            _wait(partial(service.healthy, state["connect"]["port"]), service, "serving", timeout)


def recorded_ports(state: dict[str, Any]) -> tuple[int, int]:
    """PostgreSQL's and Connect's ports: those ``up --cdc`` recorded, else 5432 and 8083."""
    pg, connect = state.get("postgres", {}), state.get("connect", {})
    return pg.get("port", 5432), connect.get("port", 8083)


def cdc_urls(state: dict[str, Any]) -> tuple[str | None, str | None]:
    """PostgreSQL's connection URL and Connect's REST address, if ``up --cdc`` started them."""
    pg, connect = state.get("postgres"), state.get("connect")
    pg_url = f"postgresql://{PG_ROLE}@127.0.0.1:{pg['port']}/{PG_DATABASE}" if pg else None
    return pg_url, (f"http://127.0.0.1:{connect['port']}" if connect else None)


def _wait(
    ready: Callable[[], bool], service: CdcService, what: str, timeout: float = 120.0
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        log = f"(its log: {service.process.log_file})"
        if not service.process.is_running():
            ended = service.process.ended()
            reason = f"it exited{f' ({ended})' if ended else ''} {log}"
            raise ServerStartError(service.name, reason, service.process.log_tail())
        if time.monotonic() > deadline:
            reason = f"not {what} after {timeout:.0f} s {log}"
            raise ServerStartError(service.name, reason, service.process.log_tail())
        time.sleep(0.5)


def cdc_status(state_dir: Path, artifacts: Path, state: dict[str, Any]) -> list[ServiceStatus]:
    """What ``fusion infra status`` says of the CDC servers ``up --cdc`` started."""
    pg_url, connect_url = cdc_urls(state)
    result = []
    for service in cdc_services(state_dir, artifacts, state):
        port = state[service.name]["port"]
        pid = service.process.pid()
        healthy = pid is not None and service.healthy(port)
        if isinstance(service, LocalPostgres):
            address, version = pg_url, "PostgreSQL " + service.bin.parent.name
        else:
            address, version = connect_url, f"Kafka Connect {CONNECT_VERSION}, Debezium"
        result.append(ServiceStatus(service.name, pid is not None, healthy, address, version, pid))
    return result
