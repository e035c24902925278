"""The idle benchmark's pure parts: CPU of a process tree, and its report."""

from __future__ import annotations

import os
import subprocess
import sys

from fusion.bench import idle


def test_the_cpu_of_a_process_tree_counts_its_children() -> None:
    # A child that burns CPU for a while, then waits to be read.
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys,time\nt=time.process_time()\n"
         "while time.process_time()-t<0.5: pass\nprint('done', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == "done\n"
        assert idle._tree_cpu_seconds(os.getpid()) >= 0.45
        assert idle._tree_cpu_seconds(child.pid) >= 0.45
    finally:
        child.kill()
        child.wait()


def test_the_report_names_each_scenario_and_the_deadlines_lateness() -> None:
    report = {
        "sources": 3,
        "commit": "abc1234",
        "window_seconds": 30,
        "scenarios": [
            {"trigger_interval": "0", "timeout": None, "cores": 0.031},
            {"trigger_interval": "default", "timeout": "30s", "cores": 0.052},
        ],
        "deadline": {"timeout_seconds": 5, "resolution_seconds": 1.0, "lateness_seconds": 0.84},
    }

    text = idle.markdown(report)

    assert "| 0 | - | 0.031 |" in text and "| default | 30s | 0.052 |" in text
    assert "came 0.84 s after its deadline (deadline_resolution 1 s)" in text
