"""A local Prometheus: Debian's package (``apt-get install prometheus``), Fusion's config.

The binary is the machine's; the config, the data and the log are Fusion's,
under ``<state_dir>/prometheus``, so the machine's own Prometheus (its service,
its ``/etc/prometheus``) is not touched. It scrapes the job ``fusion``, the one
name the shipped alert rules assume: the targets are files in
``<state_dir>/prometheus/targets/`` (Prometheus's file discovery, read again as
they change), one of them ``127.0.0.1:9464``, where ``fusion run
--metrics-port 9464`` serves. Opt-in, as the registry is: recorded in
``runtime.json`` (``prometheus``), stopped by ``down``. Its data is a
development server's: two days of it.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from fusion.infra import ManagedProcess, ServiceStatus, ToolMissingError, reuse, wait_healthy

JOB = "fusion"  # the scrape job of every pipeline (the alert rules select it)
DEFAULT_TARGET = "127.0.0.1:9464"  # `fusion run --metrics-port 9464`
RETENTION = "2d"


@dataclass(frozen=True)
class Scraping:
    """What the local Prometheus scrapes, how often, and the rule files it evaluates."""

    rules: tuple[Path, ...]
    targets: tuple[str, ...] = (DEFAULT_TARGET,)
    interval_seconds: float = 5.0  # scrapes and rule evaluations


def prometheus_binary() -> Path:
    """Debian's ``prometheus``, or one line saying how to install it."""
    found = shutil.which("prometheus")
    if found is None:
        raise ToolMissingError(
            "prometheus", "install Debian's Prometheus (`apt-get install prometheus`) for it"
        )
    return Path(found)


def config(scraping: Scraping, targets_dir: Path) -> dict[str, Any]:
    """Prometheus's configuration (JSON is YAML): the ``fusion`` job, discovered from files."""
    every = f"{scraping.interval_seconds:g}s"
    return {
        "global": {"scrape_interval": every, "evaluation_interval": every},
        "rule_files": [str(path) for path in scraping.rules],
        "scrape_configs": [
            {
                "job_name": JOB,
                "file_sd_configs": [
                    {"files": [str(targets_dir / "*.json")], "refresh_interval": every}
                ],
            }
        ],
    }


class LocalPrometheus:
    """One Prometheus, its config, data, targets and log under ``<state_dir>/prometheus``."""

    name = "prometheus"

    def __init__(self, state_dir: Path, binary: Path | None = None) -> None:
        self.dir = state_dir / "prometheus"
        self.binary = binary  # found at start: `down` stops it if the package went meanwhile
        self.process = ManagedProcess(
            "prometheus",
            self.dir / "prometheus.pid",
            self.dir / "prometheus.log",
            marker="prometheus",
        )

    @property
    def targets_dir(self) -> Path:
        return self.dir / "targets"

    def start(self, port: int, scraping: Scraping) -> None:
        self.targets_dir.mkdir(parents=True, exist_ok=True)
        config_file = self.dir / "prometheus.yml"
        config_file.write_text(json.dumps(config(scraping, self.targets_dir), indent=2))
        add_target(self.targets_dir, "default", list(scraping.targets))
        argv = [
            str(self.binary or prometheus_binary()),
            f"--config.file={config_file}",
            f"--storage.tsdb.path={self.dir / 'data'}",
            f"--storage.tsdb.retention.time={RETENTION}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        self.process.start(argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, cwd=self.dir)

    def healthy(self, port: int) -> bool:
        """True once Prometheus says it is ready to serve queries."""
        try:
            with urllib.request.urlopen(f"{prometheus_url(port)}/-/ready", timeout=5) as answer:
                return bool(answer.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def status(self, port: int) -> ServiceStatus:
        pid = self.process.pid()
        healthy = pid is not None and self.healthy(port)
        return ServiceStatus(
            self.name, pid is not None, healthy, prometheus_url(port), "Prometheus (Debian)", pid
        )


def add_target(targets_dir: Path, name: str, targets: Sequence[str], **labels: str) -> Path:
    """A file Prometheus discovers ``targets`` from (job ``fusion``); delete it to drop them."""
    path = targets_dir / f"{name}.json"
    staged = path.with_suffix(".json.tmp")  # not matched by *.json: written whole, then moved
    staged.write_text(json.dumps([{"targets": list(targets), "labels": labels}]))
    staged.replace(path)
    return path


def prometheus_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def url_of(state: dict[str, Any]) -> str | None:
    """The address of the Prometheus ``up --prometheus`` recorded in ``state``, if it did."""
    return prometheus_url(state["prometheus"]["port"]) if "prometheus" in state else None


def start_prometheus(
    state_dir: Path,
    state: dict[str, Any],
    port: int,
    scraping: Scraping,
    on_step: Callable[[str], None],
    timeout: float,
) -> list[LocalPrometheus]:
    """Start Prometheus unless it runs; record it in ``state``; wait until it is ready."""
    prometheus = LocalPrometheus(state_dir)
    if reuse(prometheus, state.get(prometheus.name), port, "--prometheus-port"):
        return []
    on_step(
        f"starting Prometheus on {prometheus_url(port)}, scraping {', '.join(scraping.targets)}"
    )
    prometheus.start(port, scraping)
    state[prometheus.name] = {"port": port}
    try:
        ready = partial(prometheus.healthy, port)
        wait_healthy({prometheus.name: (ready, prometheus.process)}, timeout)
    except BaseException:
        prometheus.process.stop()
        raise
    return [prometheus]


def recorded_prometheus(state_dir: Path, state: dict[str, Any]) -> list[LocalPrometheus]:
    """The Prometheus an earlier ``up --prometheus`` recorded (none without one)."""
    return [LocalPrometheus(state_dir)] if "prometheus" in state else []
