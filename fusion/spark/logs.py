"""Where Spark's own log lines go: a file per application, not the terminal.

The JVM behind a SparkSession logs through log4j2. Fusion hands it a
configuration that writes to ``<log dir>/<app>.log`` at the configured level,
so the terminal keeps Fusion's own lines and its status line; with
``log_to_console`` (``fusion --verbose``) warnings reach stderr as well.

Some lines bypass log4j: the JVM's own (an uncaught exception in a Spark
thread), and what Spark's Python workers print. They go to stderr of the
process that wrote them, which the JVM and its Python workers inherit from
Fusion when the JVM starts; :func:`stderr_to` points that stderr at the same
file while the JVM is launched, and gives Fusion its own stderr back after.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from fusion.core import SparkSettings

# Lines that are normal operation, not news, at WARN:
_STREAMING = "org.apache.spark.sql.execution.streaming"
QUIET = {
    # Every key's first ack reads an empty value state: expected, once per key.
    "org.apache.spark.sql.execution.python.streaming": "ERROR",
    # A busy 2-core machine runs some micro-batches longer than the trigger interval.
    f"{_STREAMING}.runtime.ProcessingTimeExecutor": "ERROR",
    f"{_STREAMING}.ProcessingTimeExecutor": "ERROR",
    # "Your hostname resolves to a loopback address": Fusion binds to 127.0.0.1 on purpose.
    "org.apache.spark.util.Utils": "ERROR",
    # "config was supplied but isn't a known config" from the Java Kafka clients.
    "org.apache.kafka.clients": "ERROR",
}


def log_file(settings: SparkSettings, home: Path, app_name: str) -> Path:
    directory = settings.log_dir or home / "logs"
    return directory / f"{app_name}.log"


def java_options(settings: SparkSettings, home: Path, app_name: str) -> str:
    """``-Dlog4j2.configurationFile=...`` for the driver JVM (written next to the log file)."""
    path = log_file(settings, home, app_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    config = path.with_suffix(".log4j2.properties")
    config.write_text(_properties(settings, path))
    return f"-Dlog4j2.configurationFile={config.as_uri()}"


def _properties(settings: SparkSettings, path: Path) -> str:
    lines = [
        "status = error",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {path}",
        "appender.file.append = true",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = %d{yyyy-MM-dd HH:mm:ss.SSS} %p %c: %m%n%ex",
        f"rootLogger.level = {settings.log_level}",
        "rootLogger.appenderRef.file.ref = file",
    ]
    if settings.log_to_console:
        lines += [
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.target = SYSTEM_ERR",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex",
            "appender.console.filter.threshold.type = ThresholdFilter",
            "appender.console.filter.threshold.level = WARN",
            "rootLogger.appenderRef.console.ref = console",
        ]
    if settings.log_level in ("WARN", "ERROR"):
        for index, (logger, level) in enumerate(sorted(QUIET.items())):
            lines += [f"logger.q{index}.name = {logger}", f"logger.q{index}.level = {level}"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def stderr_to(path: Path | None) -> Iterator[None]:
    """While inside, file descriptor 2 (what a child process inherits) writes to ``path``."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)
