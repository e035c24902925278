"""`fusion run` as a process of its own, armed to crash at named points (the crash tests)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fusion.core import faults
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client

BIN = Path(sys.executable).parent
RUN_TIMEOUT = 240.0
# Idle: no batch read a record for this long and every query caught up with its input (the
# watch loop checks both), so a run ends once its last batch committed, not seconds later.
IDLE = "3"


def start_run(
    config_file: Path,
    settings: Settings,
    points: list[str],
    fault_dir: Path,
    *args: str,
    hold: str | None = None,
) -> subprocess.Popen[str]:
    """`fusion run` until idle, in its own process group, with ``points`` armed (and
    ``hold``, a ``FUSION_HOLD_AT`` value)."""
    env = dict(
        os.environ,
        FUSION_HOME=str(settings.runtime.home),
        FUSION_SPARK_MASTER="local[2,4]",
        FUSION_SPARK_SHUFFLE_PARTITIONS="2",
        FUSION_FAULT_DIR=str(fault_dir),
    )
    env.pop(faults.CRASH_ENV, None)
    env.pop(faults.HOLD_ENV, None)
    if hold:
        env[faults.HOLD_ENV] = hold
    if points:
        env[faults.CRASH_ENV] = ",".join(points)
    return subprocess.Popen(
        [BIN / "fusion", "run", "--config", str(config_file), "--stop-when-idle", IDLE, *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the JVM goes down with it
    )


def kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def crash(
    config_file: Path, settings: Settings, points: list[str], ends: str, tmp: Path, *args: str
) -> None:
    """A run with ``points`` armed, which must end as ``ends`` says (killed, died, finished)."""
    fault_dir = tmp / f"faults-{len(list(tmp.glob('faults-*')))}"
    fault_dir.mkdir()
    process = start_run(config_file, settings, points, fault_dir, *args)
    try:
        code = process.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_group(process)
        raise AssertionError(f"the run with {points} did not end") from None
    stderr = process.stderr.read() if process.stderr else ""
    kill_group(process)
    for point in points:
        assert faults.hit(fault_dir, point.split(":")[0].split("@")[0]), (point, stderr[-2000:])
    if ends == "killed":
        assert code == -signal.SIGKILL, f"{points}: exited with {code}: {stderr[-2000:]}"
    elif ends == "died":
        assert code not in (0, -signal.SIGKILL), f"{points}: exited with {code}"
        assert "Spark's JVM stopped answering" in stderr, stderr[-2000:]
    else:
        assert code == 0, f"{points}: a retried task must not fail the run: {stderr[-2000:]}"


def finish(
    config: PipelineConfig, config_file: Path, settings: Settings, complete: int, *args: str
) -> None:
    """A clean run until it is idle; then the ``complete`` keys must all be enriched."""
    process = start_run(config_file, settings, [], config_file.parent, *args)
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while True:
            if process.poll() is not None:
                break  # idle: it stopped by itself
            assert time.monotonic() < deadline, "the clean run did not enrich every key"
            time.sleep(0.5)
        stderr = process.stderr.read() if process.stderr else ""
        assert process.returncode == 0, stderr[-2000:]
        assert_enriched(config, complete)
    finally:
        kill_group(process)


def assert_enriched(config: PipelineConfig, complete: int) -> None:
    """The enriched index holds ``complete`` documents."""
    es = es_client.connect(config.elasticsearch)
    es.indices.refresh(index=config.enriched_index)
    assert es.count(index=config.enriched_index)["count"] == complete


def timed(call: Callable[[], None], limit: float) -> float:
    """Seconds ``call`` took; fails after ``limit`` s rather than wait for it."""
    took: list[float] = []
    failed: list[BaseException] = []

    def run() -> None:
        started = time.monotonic()
        try:
            call()
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)
        took.append(time.monotonic() - started)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert took, f"still waiting after {limit:g} s"
    if failed:
        raise failed[0]
    return took[0]
