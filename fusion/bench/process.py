"""`fusion run` in its own process, as a deployment runs it: what the benchmark measures.

The benchmark produces the data and watches Elasticsearch from its own
process; the pipeline runs in another, with its own Spark driver, so the
driver's memory is the pipeline's alone. :class:`PipelineProcess` writes the
pipeline's configuration to a file, starts `fusion run` on it, waits until
every query finished its first trigger (start-up is not measured), and stops
it with Ctrl-C, after which `fusion run` prints its summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from fusion.bench.errors import PipelineProcessError
from fusion.bench.proctree import watch_peaks
from fusion.core import PipelineConfig, write_config

STARTED = "every query is running"  # what `fusion run` prints once its queries run


class PipelineProcess:
    """``with PipelineProcess(config, workdir) as run: run.wait_started(); ...; run.stop()``."""

    def __init__(
        self,
        config: PipelineConfig,
        workdir: Path,
        only: str | None = None,
        stop_when_idle: float | None = None,
    ) -> None:
        self.config = config
        self.workdir = workdir
        self.only = only
        self.stop_when_idle = stop_when_idle
        stem = f"{config.name}-{only or 'all'}".replace(":", "-")
        self.config_file = workdir / f"{stem}.toml"
        self.stdout = workdir / f"{stem}.out"
        self.stderr = workdir / f"{stem}.err"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PipelineProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_config(self.config, self.config_file)
        command = [sys.executable, "-m", "fusion", "run", "--config", str(self.config_file)]
        if self.only:
            command += ["--only", self.only]
        if self.stop_when_idle is not None:
            command += ["--stop-when-idle", str(self.stop_when_idle)]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            # Its own process group: kill() takes its JVM and Python workers down with it.
            self.process = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
        return self

    def kill(self) -> None:
        """kill -9 of the whole `fusion run` (driver, JVM, workers), as a crash would."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def wait_started(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while STARTED not in self.stderr.read_text(errors="replace"):
            self.check()
            if time.monotonic() > deadline:
                raise PipelineProcessError(
                    f"`fusion run` did not start within {timeout:.0f} s", self.stderr
                )
            time.sleep(0.2)

    def check(self) -> None:
        """Raise if the process ended by itself."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise PipelineProcessError(
                f"`fusion run` exited with {self.process.returncode}", self.stderr
            )

    def stop(self, timeout: float = 120.0) -> dict[str, Any]:
        """Ctrl-C (to the driver process only: it stops its queries, then its JVM); the summary."""
        assert self.process is not None
        self.check()
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PipelineProcessError("`fusion run` did not stop on Ctrl-C", self.stderr) from None
        return self._summary()

    def finish(self, timeout: float = 600.0) -> dict[str, Any]:
        """Wait until it stops by itself (``stop_when_idle``); the summary."""
        assert self.process is not None
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PipelineProcessError("`fusion run` did not go idle", self.stderr) from None
        if self.process.returncode != 0:
            raise PipelineProcessError(
                f"`fusion run` exited with {self.process.returncode}", self.stderr
            )
        return self._summary()

    def _summary(self) -> dict[str, Any]:
        text = self.stdout.read_text(errors="replace")
        if "{" not in text:
            raise PipelineProcessError("`fusion run` printed no summary", self.stderr)
        summary: dict[str, Any] = json.loads(text[text.index("{") :])
        return summary

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
        if self.config_file.exists():
            os.unlink(self.config_file)  # it holds the connection secrets


@contextmanager
def started_on_fresh_topics(config: PipelineConfig, prefix: str) -> Iterator[PipelineProcess]:
    """`fusion run` of ``config`` on new topics and indexes, running; all of it dropped after."""
    from fusion import pipeline
    from fusion.ops import teardown

    teardown.delete_all(config)
    pipeline.prepare(config)
    try:
        with PipelineProcess(config, Path(tempfile.mkdtemp(prefix=prefix))) as run:
            run.wait_started()
            yield run
    finally:
        teardown.delete_all(config)


@dataclass(frozen=True)
class Timed:
    """A `fusion` command's JSON report, its wall time, and its processes' peak memory (MB)."""

    report: dict[str, Any]
    seconds: float
    peaks: dict[str, int]


def timed_command(
    config: PipelineConfig, workdir: Path, *args: str, timeout: float = 3600
) -> Timed:
    """``fusion <args> --json`` on ``config``, as an operator runs it: in its own process."""
    config_file = workdir / f"{args[0]}.toml"
    err = workdir / f"{args[0]}.err"
    write_config(config, config_file)
    command = [sys.executable, "-m", "fusion", *args, "--json", "--config", str(config_file)]
    try:
        with err.open("wb") as stderr:
            started = time.monotonic()
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr)
            with watch_peaks(process.pid) as watch:
                out, _ = process.communicate(timeout=timeout)
                watch.sample()
            seconds = time.monotonic() - started
    finally:
        config_file.unlink(missing_ok=True)  # it holds the connection secrets
    if process.returncode != 0:
        raise PipelineProcessError(f"`fusion {args[0]}` exited with {process.returncode}", err)
    text = out.decode()
    return Timed(json.loads(text[text.index("{") :]), seconds, dict(watch.peaks))


def until(condition: Callable[[], bool], check: Callable[[], None]) -> None:
    """Poll ``condition`` every half second; ``check`` (a process's) raises if it died."""
    while not condition():
        check()
        time.sleep(0.5)
