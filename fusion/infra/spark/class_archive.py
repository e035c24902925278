"""A class-data-sharing archive of Spark's classes, built once per Java and pyspark.

Every `fusion run` starts a JVM that loads, parses and verifies Spark's
classes before its first batch: most of the CPU a restart costs on a small
machine, and the time a pipeline killed with kill -9 takes to be back.
Java's application class-data sharing (a dynamic archive, JEP 350) keeps
those classes parsed and verified in one file that the JVM maps at start.
With one, a restart of the driver's JVM took 18.2 CPU-seconds against 27.7
without (docs/operations.md, "Start-up").

The archive is written by a JVM that starts a session, runs a small batch
and streaming job, and exits normally (``-XX:ArchiveClassesAtExit``). It
covers the classes on the launcher's classpath (pyspark's ``jars/``), so it
is named by the Java installation and the pyspark install it was built with.
A JVM that finds it unusable (another Java build, another classpath) says
nothing and loads its classes as before: the archive only ever saves time.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from fusion.infra import ClassArchiveError, java_home

# The JVM option that maps an archive, and the one that writes it on exit.
USE_OPTION = "-XX:SharedArchiveFile"
DUMP_OPTION = "-XX:ArchiveClassesAtExit"
BUILD_TIMEOUT = 600.0


def archive_path(home: Path) -> Path:
    """Where this Java's and this pyspark's archive is (whether or not it is built yet)."""
    return home / "artifacts" / f"spark-classes-{_digest()}.jsa"


def java_option(home: Path) -> str | None:
    """The JVM option that maps the archive, or None while it is not built."""
    archive = archive_path(home)
    return f"{USE_OPTION}={archive}" if archive.is_file() else None


def build(home: Path) -> Path:
    """The archive, built now (about half a minute) unless it is there."""
    target = archive_path(home)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".spark-classes-") as tmp:
        written = Path(tmp) / "spark-classes.jsa"
        done = subprocess.run(
            [sys.executable, "-m", __name__, str(written)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
        if done.returncode != 0 or not written.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ClassArchiveError(" / ".join(tail) or f"exit code {done.returncode}")
        os.replace(written, target)  # atomic: a concurrent build finds a whole archive or none
    return target


def _digest() -> str:
    """Names what the archive depends on: the Java build and the pyspark install."""
    java = java_home()
    release = java / "release"
    spec = importlib.util.find_spec("pyspark")
    origin = spec.origin if spec and spec.origin else ""
    parts = [
        str(java),
        release.read_text(errors="replace") if release.is_file() else "",
        importlib.metadata.version("pyspark"),
        origin,
        *(_jar_stamps(Path(origin).parent / "jars") if origin else []),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _jar_stamps(jars: Path) -> list[str]:
    # The JVM maps an archive only over the very jars it was dumped from (it checks each
    # one's size and time, and silently loads as before otherwise).
    _settle_times(jars)
    return sorted(f"{j.name} {j.stat().st_size} {j.stat().st_mtime_ns}" for j in jars.glob("*.jar"))


# A jar whose time was set from its contents carries this in its nanoseconds; the time
# itself lies in the first half of the year 2000 (never in the future: tools warn).
SETTLED_NS = 271_828_182
_YEAR_2000 = 946_684_800


def _settle_times(jars: Path) -> None:
    """Give each jar a time that follows from its contents.

    An installer writes pyspark's jars with the time of the install, so a fresh
    virtualenv with the very same pyspark would need an archive of its own (half a
    minute to build, 170 MB more in the cache). With times that follow from the
    contents, it maps the one already built; another build of the jars gets other
    times, and so another archive. Where the jars are not ours to touch, their times
    stay as installed and each install builds its own archive, as before.
    """
    for jar in jars.glob("*.jar"):
        stat = jar.stat()
        if stat.st_mtime_ns % 1_000_000_000 == SETTLED_NS:
            continue
        seconds = _YEAR_2000 + int.from_bytes(_contents_digest(jar)[:3], "big")
        try:
            os.utime(jar, ns=(stat.st_atime_ns, seconds * 1_000_000_000 + SETTLED_NS))
        except OSError:
            return


def _contents_digest(jar: Path) -> bytes:
    # The zip's directory names every entry with its CRC and size: a cheap read of what
    # the jar holds, without inflating it.
    digest = hashlib.sha256()
    with zipfile.ZipFile(jar) as archive:
        for entry in archive.infolist():
            digest.update(f"{entry.filename} {entry.CRC} {entry.file_size}\n".encode())
    return digest.digest()


def _dump(target: Path) -> None:
    """Start a session, load what a pipeline's start loads, stop: the JVM writes ``target``."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("fusion-class-archive")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", f"{DUMP_OPTION}={target}")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        rows = spark.range(100).withColumn("k", F.col("id") % 7)
        # Into Spark's noop sink: the aggregate runs on the executors, nothing reaches here.
        counts = rows.groupBy("k").agg(F.count("*"), F.max("id"))
        counts.write.format("noop").mode("overwrite").save()
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "rows.json").write_text('{"value": 1}\n{"value": 2}\n')
            stream = spark.readStream.schema("value long").json(tmp)
            counted = stream.groupBy((F.col("value") % 3).alias("k")).count()
            query = (
                counted.writeStream.outputMode("update")
                .format("memory")
                .queryName("fusion_class_archive")
                .option("checkpointLocation", str(Path(tmp) / "checkpoint"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination(int(BUILD_TIMEOUT))
    finally:
        spark.stop()
    # The JVM exits normally when its stdin closes, and only then writes the archive:
    # wait for it, so that the file is whole when this process ends.
    gateway = SparkContext._gateway
    assert gateway is not None, "the session started a JVM"
    jvm = gateway.proc
    jvm.stdin.close()
    jvm.wait(timeout=BUILD_TIMEOUT)


if __name__ == "__main__":
    _dump(Path(sys.argv[1]))
