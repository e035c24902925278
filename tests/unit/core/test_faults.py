"""Fault injection: a crash point fires once per run, across processes; a hold waits on its gate."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fusion.core import faults


def _pass_in_child(point: str, env: dict[str, str]) -> int:
    """Run one pass through ``point`` in a fresh process (as a retried Spark task would)."""
    code = f"from fusion.core.faults import crash_point; crash_point({point!r})"
    return subprocess.run([sys.executable, "-c", code], env=os.environ | env).returncode


def test_a_point_fires_at_its_nth_pass_counted_across_processes(tmp_path: Path) -> None:
    env = {faults.CRASH_ENV: "indexer.after_bulk@2", faults.DIR_ENV: str(tmp_path)}

    codes = [_pass_in_child("indexer.after_bulk", env) for _ in range(3)]

    assert codes == [0, -9, 0]  # the second process is killed; the retry after it is not
    assert faults.hit(tmp_path, "indexer.after_bulk")


def test_concurrent_passes_each_get_their_own_number(tmp_path: Path) -> None:
    # Spark runs several tasks at once: two that pass a point together must not
    # both read the same count (then neither is the first, and the point never fires).
    code = (
        "import sys, time\n"
        "from fusion.core import faults\n"
        "start = float(sys.argv[1])\n"
        "while time.time() < start: pass\n"
        "print(*(faults._count_pass('indexer.after_commit') for _ in range(200)))\n"
    )
    start = str(time.time() + 1.5)
    env = os.environ | {faults.DIR_ENV: str(tmp_path)}
    children = [
        subprocess.Popen([sys.executable, "-c", code, start], env=env, stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    seen = [int(n) for child in children for n in child.communicate()[0].split()]

    assert sorted(seen) == list(range(1, 6 * 200 + 1))


def test_other_points_and_no_environment_do_nothing(tmp_path: Path) -> None:
    env = {faults.CRASH_ENV: "counter.before_commit", faults.DIR_ENV: str(tmp_path)}

    assert _pass_in_child("indexer.after_bulk", env) == 0
    assert _pass_in_child("counter.before_commit", {}) == 0
    assert not faults.hit(tmp_path, "counter.before_commit")


def test_a_hold_waits_while_its_gate_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate"
    gate.write_text("")
    monkeypatch.setenv(faults.HOLD_ENV, f"enricher.before_commit={gate}")
    passed = threading.Event()

    def stage() -> None:
        faults.crash_point("enricher.before_commit")
        passed.set()

    thread = threading.Thread(target=stage)
    thread.start()
    deadline = time.monotonic() + 10
    while not Path(f"{gate}.reached").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not passed.is_set(), "held at the gate"
    gate.unlink()
    thread.join(timeout=10)
    assert passed.is_set()
    faults.crash_point("enricher.before_commit")  # the gate is gone: no second hold
