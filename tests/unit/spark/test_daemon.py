"""The preloading Python daemon: what it loads, that it forks from one thread, where it is used."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

from fusion.spark import daemon
from fusion.spark.session import DAEMON_MODULE, preloading_daemon

# A fresh interpreter: preload, then count the process's threads (a fork keeps only one).
THREADS_AFTER_PRELOAD = (
    "import os; from fusion.spark import daemon; failed = daemon.preload(); "
    "print(len(os.listdir('/proc/self/task')), failed)"
)


def test_the_daemon_loads_every_task_module_and_forks_from_a_single_thread() -> None:
    env = {k: v for k, v in os.environ.items() if k not in daemon.THREADLESS}
    out = subprocess.run(
        [sys.executable, "-c", THREADS_AFTER_PRELOAD],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(maxsplit=1)

    assert out == ["1", "[]\n"]


def test_a_module_that_fails_to_load_is_left_to_the_worker() -> None:
    assert daemon.preload(("fusion.no_such_module",)) == ["fusion.no_such_module"]


def test_the_daemon_runs_where_the_executors_run_this_interpreter_only() -> None:
    here = sys.executable
    assert preloading_daemon({}, "local[8,4]", here, submitted=False) == {
        DAEMON_MODULE: "fusion.spark.daemon"
    }
    assert preloading_daemon({}, "spark://m:7077", here, submitted=False) == {}
    assert preloading_daemon({}, "local[*]", here, submitted=True) == {}
    assert preloading_daemon({}, "local[8,4]", "/opt/other/python", submitted=False) == {}
    own = {DAEMON_MODULE: "pyspark.daemon"}
    assert preloading_daemon(own, "local[8,4]", here, submitted=False) == own


class _Job:
    """Spark's job of one row per task slot, as ``start_workers`` runs it."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def mapInArrow(self, function: object, schema: str) -> _Job:
        return self

    def count(self) -> int:
        self.log.append("workers started")
        return 0


class _Session:
    def __init__(self, daemon_module: str, log: list[str]) -> None:
        conf = {daemon.CONF_KEY: daemon_module}
        self.sparkContext = SimpleNamespace(
            getConf=lambda: SimpleNamespace(get=lambda key, default: conf.get(key, default)),
            defaultParallelism=8,
        )
        self.log = log

    def range(self, rows: int, numPartitions: int) -> _Job:
        self.log.append(f"{rows} rows in {numPartitions} tasks")
        return _Job(self.log)


def test_the_workers_have_started_when_start_workers_returns() -> None:
    # The queries start after it: a backlog's first batch must not share the cores with them.
    log: list[str] = []
    daemon.start_workers(_Session(daemon.MODULE, log))  # type: ignore[arg-type]

    assert log == ["8 rows in 8 tasks", "workers started"]


def test_pysparks_own_daemon_starts_no_workers_ahead() -> None:
    log: list[str] = []
    daemon.start_workers(_Session("pyspark.daemon", log))  # type: ignore[arg-type]

    assert log == []
