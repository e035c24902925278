"""Prometheus's own checker, for the tests of what Fusion hands to a Prometheus."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run Debian's promtool (package ``prometheus``; .ci/run installs it)."""
    if shutil.which("promtool") is None:
        pytest.fail("promtool is not installed: apt-get install prometheus (.ci/run installs it)")
    return subprocess.run(
        ["promtool", *args], input=stdin, capture_output=True, text=True, check=False
    )
