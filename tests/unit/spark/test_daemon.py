"""The preloading Python daemon: what it loads, that it forks from one thread, where it is used."""

from __future__ import annotations

import os
import subprocess
import sys

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
