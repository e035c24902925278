"""The driver's peak memory is its own, not that of the process that started it."""

from __future__ import annotations

import subprocess
import sys

from fusion.spark.watch import _peak_mb


def test_a_driver_started_by_a_big_process_reports_its_own_peak() -> None:
    # The benchmark holds its whole dataset when it starts `fusion run`.
    held = bytearray(400 << 20)
    for page in range(0, len(held), 4096):
        held[page] = 1
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from fusion.spark.watch import _peak_mb; print(_peak_mb('self'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )

    assert int(child.stdout) < 200, "the parent's 400 MB leaked into the driver's peak"
    assert (_peak_mb("self") or 0) >= 400
