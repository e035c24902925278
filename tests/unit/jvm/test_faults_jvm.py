"""The JVM's fault points count passes exactly when tasks pass them together.

A test that crashes "the first pass" of a point must crash exactly one of
the tasks that pass it, however many pass at once; reconcile runs its slices
in parallel, and a count that let two tasks read the same pass number let
a crash test finish without any crash (test_reconcile, before_commit).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fusion.infra import jvm_code as jvm

HARNESS = Path(__file__).parent / "java" / "FaultsRace.java"
FAULTS = jvm.SOURCES / "fusion" / "output" / "Faults.java"


def test_threads_passing_a_point_together_crash_exactly_once(tmp_path: Path) -> None:
    javac = jvm.find_javac()
    if javac is None:
        pytest.skip("needs a JDK's javac to compile the harness")
    classes = tmp_path / "classes"
    subprocess.run(
        [javac, "-nowarn", "-d", str(classes), str(FAULTS), str(HARNESS)],
        check=True, capture_output=True,
    )  # fmt: skip
    java = Path(javac).parent / "java"
    found = subprocess.run(
        [str(java), "-cp", str(classes), "fusion.output.FaultsRace", "200"],
        check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert found.stdout.strip() == "0", f"{found.stdout.strip()} of 200 rounds did not crash once"
