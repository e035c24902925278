"""The processes under a benchmark's `fusion run` (its Spark JVM, Python workers), from /proc."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol, TypeVar

from fusion.core.machine import procfs

# The parts :func:`cpu_snapshot` reads, as cores tables name them, in their order (a server
# not named here, the schema registry, gets a column after them).
PART_NAMES = {"jvm": "Spark JVM", "worker": "Python workers", "driver": "driver",
              "elasticsearch": "Elasticsearch", "kafka": "Kafka",
              "bench": "the benchmark (producer, timing)"}  # fmt: skip


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process under it."""
    stats = [procfs.stat(pid) for pid in procfs.descendants(root)]
    return sum(s.cpu_ticks for s in stats if s is not None) / os.sysconf("SC_CLK_TCK")


def cpu_by_part(root: int, servers: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds so far of each part: the run's ``jvm``, ``worker`` and ``driver``
    processes (:func:`kind_of`), and each server's process tree by name."""
    ticks = os.sysconf("SC_CLK_TCK")
    parts = dict.fromkeys(("jvm", "worker", "driver"), 0.0)
    for pid in procfs.descendants(root):
        kind, stat = kind_of(pid), procfs.stat(pid)
        if kind is not None and stat is not None:
            parts[kind] += stat.cpu_ticks / ticks
    for name, pid in servers.items():
        parts[name] = tree_cpu_seconds(pid)
    return parts


def cpu_snapshot(root: int, servers: Mapping[str, int]) -> dict[str, float]:
    """:func:`cpu_by_part`, and the CPU seconds so far of the benchmark's own process
    (``bench``: it produces the records) and of the whole machine (``machine``), so that
    what no part names (the registry, the system) shows as the difference."""
    ticks = os.sysconf("SC_CLK_TCK")
    parts = cpu_by_part(root, servers)
    own = procfs.stat(os.getpid())
    parts["bench"] = 0.0 if own is None else own.cpu_ticks / ticks
    parts["machine"] = (procfs.busy_ticks() or 0) / ticks
    return parts


def cores_between(
    before: Mapping[str, float], after: Mapping[str, float], seconds: float
) -> dict[str, float]:
    """Cores each part kept busy between two readings ``seconds`` apart."""
    if seconds <= 0:
        return {}
    return {k: round((v - before.get(k, 0.0)) / seconds, 2) for k, v in after.items()}


def kind_of(pid: int) -> str | None:
    """``jvm``, ``worker`` (Spark's Python workers and their daemon) or ``driver`` (Python)."""
    command = procfs.cmdline(pid)
    if not command:
        return None
    text = b" ".join(command)
    if b"pyspark.daemon" in text or b"pyspark.worker" in text:
        return "worker"
    if command[0].endswith(b"java"):
        return "jvm"
    if b"python" in command[0]:
        return "driver"
    return None


class PeakWatch:
    """The highest ``VmHWM`` of each kind of process under ``root``: see :func:`watch_peaks`."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peaks: dict[str, int] = {}

    def sample(self) -> None:
        for pid in procfs.descendants(self.root):
            kind, mb = kind_of(pid), procfs.peak_mb(pid)
            if kind is not None and mb is not None:
                self.peaks[kind] = max(mb, self.peaks.get(kind, 0))


class Sampler(Protocol):
    def sample(self) -> None: ...


S = TypeVar("S", bound=Sampler)


@contextmanager
def sampling(sampler: S, every: float, name: str) -> Iterator[S]:
    """Call ``sampler.sample()`` every ``every`` seconds from a thread while the block runs."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            sampler.sample()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        yield sampler
    finally:
        stop.set()
        thread.join()


def watch_peaks(root: int, every: float = 0.25) -> AbstractContextManager[PeakWatch]:
    """Sample the processes under ``root`` while the block runs.

    A process's high-water mark is its own peak, so sampling need only see
    each process alive once; Spark keeps its Python workers for later tasks.
    """
    return sampling(PeakWatch(root), every, "peak-watch")
