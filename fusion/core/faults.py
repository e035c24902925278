"""Fault injection for the tests: crash or hold the process at a named point.

``FUSION_CRASH_AT=<point>[@N][:jvm][,...]``
    At the N-th pass (default the first) through :func:`crash_point` ``point``,
    SIGKILL this process: no ``finally``, no flush, exactly like ``kill -9``.
    Inside an executor task "this process" is the task's Python worker; with
    ``:jvm`` it is the JVM that started it (an executor, or in local mode the
    whole Spark application).

``FUSION_HOLD_AT=<point>=<gate file>[,...]``
    At ``point``, create ``<gate file>.reached`` and wait while the gate file
    exists: a test holds a stage inside, say, an open Kafka transaction, acts
    on the servers, then deletes the gate to let it go on.

``FUSION_FAULT_DIR=<dir>``
    Counts passes in files under ``dir`` instead of in memory, so the driver
    and every Python worker share one count: a point fires once per test run
    even when Spark retries the task in a fresh worker. ``<point>.hit`` records
    that it fired.

Stages call :func:`crash_point` where a crash is most dangerous (between an
Elasticsearch write and its ack, inside a Kafka transaction, ...). Unset
(always, outside the tests), a point costs one environment lookup.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

from fusion.core.machine import procfs

CRASH_ENV = "FUSION_CRASH_AT"
HOLD_ENV = "FUSION_HOLD_AT"
DIR_ENV = "FUSION_FAULT_DIR"
# Spark executors need these too (see fusion.spark.session.spark_session).
ENV_NAMES = (CRASH_ENV, HOLD_ENV, DIR_ENV)
HOLD_LIMIT_SECONDS = 600.0

_passes: Counter[str] = Counter()
_lock = threading.Lock()


def crash_point(name: str) -> None:
    """Crash or hold here if the environment names ``name`` (see the module docstring)."""
    if os.environ.get(HOLD_ENV):
        _hold(name, os.environ[HOLD_ENV])
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    for spec in wanted.split(","):
        target, _, kill_what = spec.strip().partition(":")
        point, _, nth = target.partition("@")
        if point == name and _count_pass(name) == int(nth or 1):
            _record_hit(name)
            os.kill(_jvm_ancestor() if kill_what == "jvm" else os.getpid(), signal.SIGKILL)


def _count_pass(name: str) -> int:
    directory = os.environ.get(DIR_ENV)
    if not directory:
        with _lock:
            _passes[name] += 1
            return _passes[name]
    # One byte appended per pass, across processes. The pass number is where this
    # process's own byte landed (the offset O_APPEND's write left), not the file's
    # size afterwards: two tasks passing together would both read the later size.
    fd = os.open(Path(directory) / f"{name}.passes", os.O_CREAT | os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b".")
        return os.lseek(fd, 0, os.SEEK_CUR)
    finally:
        os.close(fd)


def _record_hit(name: str) -> None:
    directory = os.environ.get(DIR_ENV)
    if directory:
        (Path(directory) / f"{name}.hit").write_text(str(os.getpid()))


def hit(directory: Path, name: str) -> bool:
    """Whether ``name`` fired in a run that used ``FUSION_FAULT_DIR=directory``."""
    return (directory / f"{name}.hit").exists()


def _hold(name: str, spec: str) -> None:
    for entry in spec.split(","):
        point, _, gate = entry.strip().partition("=")
        if point != name or not gate:
            continue
        gate_file = Path(gate)
        if not gate_file.exists():
            continue
        Path(f"{gate}.reached").write_text(str(os.getpid()))
        deadline = time.monotonic() + HOLD_LIMIT_SECONDS
        while gate_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)


def _jvm_ancestor() -> int:
    """The nearest ancestor process that is a JVM (a Python worker's executor)."""
    pid = os.getppid()
    while pid > 1:
        command = procfs.cmdline(pid)
        if command and b"java" in command[0]:
            return pid
        found = procfs.stat(pid)
        if found is None:
            break
        pid = found.ppid
    raise RuntimeError("no JVM among this process's ancestors")
