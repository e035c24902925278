"""The processes under a benchmark's `fusion run` (its Spark JVM, Python workers), from /proc."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol, TypeVar


def descendants(root: int) -> list[int]:
    """``root`` and every process under it that is alive now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                children.setdefault(int(stat[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process under it."""
    total = 0
    for pid in descendants(root):
        stat = _stat(pid)
        if stat is not None:
            total += int(stat[11]) + int(stat[12])
    return total / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def kind_of(pid: int) -> str | None:
    """``jvm``, ``worker`` (Spark's Python workers and their daemon) or ``driver`` (Python)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    text = b" ".join(command)
    if b"pyspark.daemon" in text or b"pyspark.worker" in text:
        return "worker"
    if command and command[0].endswith(b"java"):
        return "jvm"
    if b"python" in command[0]:
        return "driver"
    return None


def peak_mb(pid: int) -> int | None:
    """The kernel's high-water mark of ``pid``'s resident memory (``VmHWM``), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        return None
    return None


class PeakWatch:
    """The highest ``VmHWM`` of each kind of process under ``root``: see :func:`watch_peaks`."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peaks: dict[str, int] = {}

    def sample(self) -> None:
        for pid in descendants(self.root):
            kind, mb = kind_of(pid), peak_mb(pid)
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
