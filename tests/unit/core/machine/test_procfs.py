"""What /proc says of a process: its parent and group, its command line, its own peak memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from fusion.core.machine import procfs


def test_a_driver_started_by_a_big_process_reports_its_own_peak() -> None:
    # The benchmark holds its whole dataset when it starts `fusion run`.
    held = bytearray(400 << 20)
    for page in range(0, len(held), 4096):
        held[page] = 1
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from fusion.core.machine import procfs; print(procfs.peak_mb('self'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )

    assert int(child.stdout) < 200, "the parent's 400 MB leaked into the driver's peak"
    assert (procfs.peak_mb("self") or 0) >= 400


def test_a_process_is_read_as_the_kernel_sees_it() -> None:
    program = "import sys; print('up', flush=True); sys.stdin.read()"
    child = subprocess.Popen(
        [sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        # Popen returns once exec began; the kernel fills the new command line a moment later.
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        found = procfs.stat(child.pid)
        assert found is not None and found.ppid == os.getpid() and found.pgrp == os.getpgrp()
        assert procfs.cmdline(child.pid) == [
            sys.executable.encode(),
            b"-c",
            program.encode(),
        ]
        assert child.pid in procfs.descendants(os.getpid()) and child.pid in procfs.pids()
    finally:
        child.kill()
        child.wait()
    assert procfs.stat(child.pid) is None and procfs.cmdline(child.pid) is None
    assert procfs.peak_mb(child.pid) is None


def test_a_child_not_waited_for_tells_how_it_ended() -> None:
    def ended(child: subprocess.Popen[bytes]) -> str | None:
        deadline = time.monotonic() + 10
        while (status := procfs.exit_status(child.pid)) is None:
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        return status

    exited = subprocess.Popen(["sh", "-c", "exit 3"])
    killed = subprocess.Popen(["sleep", "30"])
    assert procfs.exit_status(killed.pid) is None  # alive
    killed.send_signal(signal.SIGKILL)
    try:
        assert ended(exited) == "exit code 3"
        assert ended(killed) == "killed by signal 9 (SIGKILL)"
    finally:
        exited.wait()
        killed.wait()
    assert procfs.exit_status(exited.pid) is None  # waited for: gone


def test_the_machines_busy_time_grows_by_what_a_process_spends() -> None:
    before = procfs.busy_ticks()
    spent = time.process_time()
    while time.process_time() - spent < 0.3:
        pass
    after = procfs.busy_ticks()

    assert before is not None and after is not None
    # This process alone kept one core busy for 0.3 s; others may have added to it.
    assert (after - before) / os.sysconf("SC_CLK_TCK") >= 0.25
