"""A Spark standalone cluster on 127.0.0.1: one master and N workers, from the pyspark install.

pyspark ships Spark's jars and ``bin/spark-class``, which is all a standalone
cluster needs: ``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker`` run from there, nothing is
downloaded. Each worker offers one core and its own work directory (where its
executors run), so applications submitted to ``spark://127.0.0.1:<port>``
get one executor per worker.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fusion.core.machine import port_is_free
from fusion.infra import (
    InfraError,
    ManagedProcess,
    PortInUseError,
    ServerStartError,
    ServiceStatus,
    companion_port,
    get_json,
    java_home,
    spark_version,
)


@dataclass(frozen=True)
class SparkPorts:
    master: int
    master_ui: int


def spark_home() -> Path:
    """The pyspark install: it has ``bin/spark-class`` and ``jars/``."""
    import pyspark

    home = Path(pyspark.__file__).parent
    if not (home / "bin" / "spark-class").exists():
        raise InfraError(f"{home} has no bin/spark-class: reinstall pyspark from PyPI")
    return home


class LocalSparkCluster:
    """The master and ``workers`` workers, state under ``<state_dir>/spark``."""

    name = "spark"

    def __init__(
        self,
        state_dir: Path,
        workers: int,
        worker_memory: str = "2g",
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.dir = state_dir / "spark"
        self.workers = workers
        self.worker_memory = worker_memory
        self.jvm_options = tuple(jvm_options)  # the master's and workers' own JVMs
        self.master = ManagedProcess(
            "spark-master",
            self.dir / "master.pid",
            self.dir / "master.log",
            marker="org.apache.spark.deploy.master.Master",
        )

    def worker_dir(self, index: int) -> Path:
        """Worker ``index``'s work dir: its executors run in ``<it>/<app id>/<executor id>``."""
        return self.dir / f"worker-{index}"

    def worker(self, index: int) -> ManagedProcess:
        return ManagedProcess(
            f"spark-worker-{index}",
            self.dir / f"worker-{index}.pid",
            self.dir / f"worker-{index}.log",
            # The work directory names this worker among the others on the command line.
            marker=str(self.worker_dir(index)),
        )

    @property
    def processes(self) -> list[ManagedProcess]:
        return [self.master, *(self.worker(i) for i in range(1, self.workers + 1))]

    def start(self, ports: SparkPorts) -> None:
        spark_class = str(spark_home() / "bin" / "spark-class")
        self.dir.mkdir(parents=True, exist_ok=True)
        env = self.environment()
        if not self.master.is_running():
            self.master.start(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(ports.master), "--webui-port", str(ports.master_ui)],
                env,
                cwd=self.dir,
            )  # fmt: skip
        url = f"spark://127.0.0.1:{ports.master}"
        for index in range(1, self.workers + 1):
            process = self.worker(index)
            if process.is_running():
                continue
            work = self.worker_dir(index)
            work.mkdir(parents=True, exist_ok=True)
            process.start(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", self.worker_memory, "--work-dir", str(work),
                 "--webui-port", "0", url],
                env,
                cwd=work,
            )  # fmt: skip

    def environment(self) -> dict[str, str]:
        """What the master's and the workers' ``spark-class`` run with."""
        return {
            "JAVA_HOME": str(java_home()),
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.dir),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(self.dir)),
            "SPARK_DAEMON_JAVA_OPTS": " ".join(self.jvm_options),
        }

    def alive_workers(self, ui_port: int) -> int:
        """Workers the master counts as alive (0 if it does not answer)."""
        try:
            state = get_json(f"http://127.0.0.1:{ui_port}/json/")
        except (OSError, ValueError):
            return 0
        alive = state.get("aliveworkers", 0)
        return alive if isinstance(alive, int) else 0

    def healthy(self, ui_port: int) -> bool:
        return self.alive_workers(ui_port) >= self.workers

    def is_running(self) -> bool:
        return self.master.is_running()

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def log_tail(self) -> str:
        return self.master.log_tail()


def start_cluster(
    state_dir: Path,
    state: dict[str, Any],
    workers: int,
    port: int,
    on_step: Callable[[str], None],
    jvm_options: Sequence[str] = (),
) -> LocalSparkCluster:
    """Start a master and ``workers`` (or keep the ones running); record them in ``state``."""
    cluster = LocalSparkCluster(state_dir, workers, jvm_options=jvm_options)
    recorded = state.get("spark")
    if cluster.is_running() and recorded:
        if recorded["port"] != port or recorded["workers"] != workers:
            raise InfraError(
                f"a Spark master with {recorded['workers']} worker(s) already runs on "
                f"port {recorded['port']}; run `fusion infra down` first"
            )
        return cluster
    if not port_is_free(port):
        raise PortInUseError("the Spark master", port, "--spark-port")
    ports = SparkPorts(port, companion_port(port, 1003))
    on_step(f"starting a Spark master on 127.0.0.1:{port} and {workers} worker(s)")
    cluster.start(ports)
    state["spark"] = {"port": port, "ui_port": ports.master_ui, "workers": workers}
    return cluster


def wait_until_alive(cluster: LocalSparkCluster, ui_port: int, timeout: float) -> None:
    """Until the master counts every worker; :class:`ServerStartError` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not cluster.healthy(ui_port):
        if not cluster.is_running():
            raise ServerStartError("spark", "the master exited", cluster.log_tail())
        if time.monotonic() > deadline:
            alive = cluster.alive_workers(ui_port)
            raise ServerStartError(
                "spark",
                f"{alive} of {cluster.workers} worker(s) registered after {timeout:.0f} s",
                cluster.log_tail(),
            )
        time.sleep(0.5)


def spark_status(cluster: LocalSparkCluster, recorded: dict[str, Any]) -> ServiceStatus:
    """What ``fusion infra status`` says of the master and its workers."""
    pid = cluster.master.pid()
    alive = cluster.alive_workers(recorded["ui_port"]) if pid else 0
    return ServiceStatus(
        "spark",
        pid is not None,
        pid is not None and alive >= recorded["workers"],
        f"spark://127.0.0.1:{recorded['port']}",
        f"{spark_version()}, {alive} of {recorded['workers']} worker(s) alive",
        pid,
    )
