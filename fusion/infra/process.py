"""Detached server processes: start, find again from a pid file, stop with nothing left behind.

Each server runs in its own session (process group), so stopping it signals
the launcher script and every JVM it forked at once. Linux is assumed: the
group's members are read from ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fusion.core.machine import procfs


@dataclass(frozen=True)
class ManagedProcess:
    """A server process identified by its pid file and a marker in its command line."""

    name: str
    pid_file: Path
    log_file: Path
    marker: str
    # What asks it to stop: PostgreSQL's SIGTERM waits for every client (a connector's
    # replication connection never leaves); its SIGINT is the fast shutdown.
    stop_signal: signal.Signals = signal.SIGTERM

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        user: str | None = None,
    ) -> int:
        """Start ``argv`` detached, appending output to the log file; return its pid."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        account = pwd.getpwnam(user) if user else None
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=account.pw_uid if account else None,
                group=account.pw_gid if account else None,
                extra_groups=[] if account else None,
            )
        self.pid_file.write_text(str(process.pid))
        _until_exec_shows(process.pid)
        return process.pid

    def pid(self) -> int | None:
        """The pid from the pid file, if that process group still runs our server."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if group_members(pid, self.marker) else None

    def is_running(self) -> bool:
        return self.pid() is not None

    def stop(self, timeout: float = 60.0) -> None:
        """Signal the process group (SIGTERM), wait for it, SIGKILL what remains."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return
        _signal_group(pid, self.stop_signal)
        deadline = time.monotonic() + timeout
        while group_members(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if group_members(pid):
            _signal_group(pid, signal.SIGKILL)
            while group_members(pid):
                time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)

    def ended(self) -> str:
        """How the server this process started, and has not waited for, ended (a zombie's
        ``exit code N`` or ``killed by signal N (NAME)``); "" when that cannot be told."""
        with contextlib.suppress(FileNotFoundError, ValueError):
            return procfs.exit_status(int(self.pid_file.read_text().strip())) or ""
        return ""

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def group_members(pgid: int, marker: str | None = None) -> list[int]:
    """Pids of live processes in process group ``pgid``.

    With ``marker``, the group counts only if one member's command line
    contains it: a stale pid file whose number was reused returns nothing.
    """
    members = []
    matched = marker is None
    for pid in procfs.pids():
        found = procfs.stat(pid)
        if found is None or found.state == "Z" or found.pgrp != pgid:
            continue
        members.append(pid)
        if not matched and marker is not None:
            matched = marker.encode() in b"\0".join(procfs.cmdline(pid) or [])
    return members if matched else []


def _until_exec_shows(pid: int, seconds: float = 2.0) -> None:
    """Wait until the kernel shows the new program's command line.

    Popen returns once exec has begun (its close-on-exec pipe closed), and the
    kernel lays the new arguments out a moment later: until then the command
    line reads empty, and :meth:`ManagedProcess.pid` would not find its marker
    (seen under load in CI). A zombie is left for :meth:`ManagedProcess.ended`.
    """
    deadline = time.monotonic() + seconds
    while not procfs.cmdline(pid) and time.monotonic() < deadline:
        found = procfs.stat(pid)
        if found is None or found.state == "Z":
            return
        time.sleep(0.005)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
