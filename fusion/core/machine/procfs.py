"""The one reader of Linux's ``/proc``: processes, their parents, command lines and memory.

Every function answers ``None`` (or leaves the process out) when the process
is gone or unreadable: a process can end between listing and reading.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Stat:
    """The fields of ``/proc/<pid>/stat`` that Fusion reads."""

    state: str  # R, S, D, Z, ...
    ppid: int
    pgrp: int
    cpu_ticks: int  # user + system, in clock ticks (os.sysconf("SC_CLK_TCK") a second)


def pids() -> list[int]:
    """Every process alive now."""
    return [int(entry) for entry in os.listdir(PROC) if entry.isdigit()]


def stat(pid: int | str) -> Stat | None:
    try:
        text = (PROC / str(pid) / "stat").read_text()
        # The fields after the command name, which is in parentheses and may hold any of them.
        fields = text[text.rindex(")") + 2 :].split()
        return Stat(fields[0], int(fields[1]), int(fields[2]), int(fields[11]) + int(fields[12]))
    except (OSError, ValueError, IndexError):
        return None


def start_ticks(pid: int | str) -> int | None:
    """When the process started, in ticks since boot: the same pid, started anew, is another."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
        return int(text[text.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def exit_status(pid: int | str) -> str | None:
    """How a process that has exited but was not waited for yet (a zombie) ended:
    ``exit code N`` or ``killed by signal N (NAME)``; None for a live or unknown one."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            return None
        status = int(fields[49])  # field 52 of stat(5): the wait status
    except (OSError, ValueError, IndexError):
        return None
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return f"killed by signal {number} ({signal.Signals(number).name})"
    return f"exit code {os.WEXITSTATUS(status)}"


def busy_ticks() -> int | None:
    """The machine's CPU time spent busy so far, all cores, in clock ticks (``/proc/stat``:
    user, nice, system, irq, softirq and steal; a guest's time is inside user already)."""
    try:
        fields = (PROC / "stat").read_text().split("\n", 1)[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
    except (OSError, ValueError, IndexError):
        return None
    return user + nice + system + irq + softirq + steal


def boot_id() -> str:
    """This boot of this machine's kernel: pids are told apart within one boot only."""
    try:
        return (PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return ""


def cmdline(pid: int | str) -> list[bytes] | None:
    """The process's arguments, the program first; ``[]`` for a kernel thread or a zombie."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return raw.rstrip(b"\0").split(b"\0") if raw else []


def peak_mb(pid: int | str) -> int | None:
    """The kernel's high-water mark of the process's resident memory (``VmHWM``), in MB."""
    return _status_mb(pid, "VmHWM")


def rss_mb(pid: int | str) -> int | None:
    """The process's resident memory now (``VmRSS``), in MB."""
    return _status_mb(pid, "VmRSS")


def _status_mb(pid: int | str, field: str) -> int | None:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def descendants(root: int) -> list[int]:
    """``root`` and every process under it that is alive now."""
    children: dict[int, list[int]] = {}
    for pid in pids():
        found = stat(pid)
        if found is not None:
            children.setdefault(found.ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out
