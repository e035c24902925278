"""Fault injection: a crash point fires once per run, across processes; a hold waits on its gate."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fusion.runtime import faults


def _pass_in_child(point: str, env: dict[str, str]) -> int:
    """Run one pass through ``point`` in a fresh process (as a retried Spark task would)."""
    code = f"from fusion.runtime.faults import crash_point; crash_point({point!r})"
    return subprocess.run([sys.executable, "-c", code], env=os.environ | env).returncode


def test_a_point_fires_at_its_nth_pass_counted_across_processes(tmp_path: Path) -> None:
    env = {faults.CRASH_ENV: "indexer.after_bulk@2", faults.DIR_ENV: str(tmp_path)}

    codes = [_pass_in_child("indexer.after_bulk", env) for _ in range(3)]

    assert codes == [0, -9, 0]  # the second process is killed; the retry after it is not
    assert faults.hit(tmp_path, "indexer.after_bulk")


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
