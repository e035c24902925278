from __future__ import annotations

import time
from pathlib import Path

import pytest

from fusion.core.machine import procfs
from fusion.infra.process import ManagedProcess, group_members


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    process = ManagedProcess("sleeper", tmp_path / "p.pid", tmp_path / "p.log", marker="sleep")
    # A parent with a child, like the Elasticsearch launcher and its server JVM.
    pid = process.start(
        ["/bin/sh", "-c", "sleep 300 & sleep 300; wait"],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert process.pid() == pid
    deadline = time.monotonic() + 10
    while len(group_members(pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(group_members(pid)) >= 2

    process.stop(timeout=5)

    assert group_members(pid) == []
    assert process.pid() is None
    assert not process.pid_file.exists()


def test_stale_pid_file_is_not_our_process(tmp_path: Path) -> None:
    process = ManagedProcess("kafka", tmp_path / "k.pid", tmp_path / "k.log", marker="kafka.Kafka")
    process.pid_file.write_text("1")

    assert process.pid() is None


def test_log_tail_returns_last_lines(tmp_path: Path) -> None:
    process = ManagedProcess("x", tmp_path / "x.pid", tmp_path / "x.log", marker="x")
    process.log_file.write_text("\n".join(f"line {i}" for i in range(30)))

    assert process.log_tail(2) == "line 28\nline 29"


def test_start_returns_once_the_new_program_shows_its_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel shows an exec'd program's arguments a moment after Popen returns (seen under
    load in CI): start waits for them, so pid() finds the marker at once."""
    real, calls = procfs.cmdline, []

    def shown_late(pid: int | str) -> list[bytes] | None:
        calls.append(pid)
        return [] if len(calls) < 3 else real(pid)

    monkeypatch.setattr(procfs, "cmdline", shown_late)
    process = ManagedProcess("sleeper", tmp_path / "p.pid", tmp_path / "p.log", marker="sleep")
    pid = process.start(["/bin/sh", "-c", "sleep 300"], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    try:
        assert len(calls) >= 3
        assert process.pid() == pid
    finally:
        process.stop(timeout=5)
