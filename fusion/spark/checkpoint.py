"""Files in a query's checkpoint, wherever it lives: read and written with Hadoop's file API.

``checkpoint_dir`` is any URI Spark can write to (``file://``, ``hdfs://``,
``s3a://``, ...). Fusion reads from it what Spark keeps there (the query id in
``metadata``, the offset and commit logs) and keeps its own small files there
(``fusion reconcile``'s plan), always through the Hadoop ``FileSystem`` of the
running SparkSession, so the same code works on every store Spark supports.

Offset log (``offsets/<batch id>``): line 1 is the log version, line 2 the
batch metadata (``batchTimestampMs``, ...), then one JSON line per source, for
the Kafka source ``{"<topic>": {"<partition>": <end offset>}}``.

A checkpoint on this machine's disk (a ``file:`` URI) can also be
read without Spark (:func:`on_this_disk`): what ``fusion run`` checks before
its JVM starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Offsets = dict[tuple[str, int], int]


_CLASSES: dict[int, tuple[Any, Any]] = {}


def _java_classes(spark: SparkSession) -> tuple[Any, Any]:
    """Hadoop's ``Path`` and commons-io's ``IOUtils``, looked up once per JVM.

    py4j resolves ``jvm.org.apache...`` one package name at a time, and each
    name that is not a class costs a failed class lookup through every jar on
    the classpath: done per micro-batch, that was a visible share of the driver's CPU.
    """
    jvm: Any = spark.sparkContext._jvm
    found = _CLASSES.get(id(jvm))
    if found is None:
        found = _CLASSES[id(jvm)] = (
            jvm.org.apache.hadoop.fs.Path,
            jvm.org.apache.commons.io.IOUtils,
        )
    return found


class ReadableFiles(Protocol):
    """What reading a checkpoint needs: :class:`CheckpointFiles` or :class:`LocalFiles`."""

    uri: str

    def exists(self, relative: str = "") -> bool: ...

    def read_text(self, relative: str) -> str | None: ...

    def names(self, relative: str) -> list[str]: ...


class LocalFiles:
    """The files under a checkpoint on this machine's disk, read with Python alone."""

    def __init__(self, uri: str, root: Path) -> None:
        self.uri = uri.rstrip("/")
        self._root = root

    def exists(self, relative: str = "") -> bool:
        return (self._root / relative).exists()

    def read_text(self, relative: str) -> str | None:
        path = self._root / relative
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def names(self, relative: str) -> list[str]:
        path = self._root / relative
        return sorted(entry.name for entry in path.iterdir()) if path.is_dir() else []


def on_this_disk(uri: str) -> LocalFiles | None:
    """The checkpoint's files if ``uri`` is a ``file:`` URI; None for any other store.

    A path without a scheme is left to Hadoop: its default file system may be
    another store (``fs.defaultFS``). Fusion's own checkpoint URIs always name theirs
    (:attr:`fusion.core.config.PipelineConfig.checkpoint_dir`).
    """
    parsed = urlparse(uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return LocalFiles(uri, Path(unquote(parsed.path)))
    return None


class CheckpointFiles:
    """The files under one checkpoint URI."""

    def __init__(self, spark: SparkSession, uri: str) -> None:
        self._Path, self._IOUtils = _java_classes(spark)
        self.uri = uri.rstrip("/")
        root = self._Path(self.uri)
        self._fs = root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def _path(self, relative: str) -> Any:
        return self._Path(f"{self.uri}/{relative}" if relative else self.uri)

    def exists(self, relative: str = "") -> bool:
        return bool(self._fs.exists(self._path(relative)))

    def read_text(self, relative: str) -> str | None:
        """The file's text, or None if it does not exist."""
        path = self._path(relative)
        if not self._fs.exists(path):
            return None
        stream = self._fs.open(path)
        try:
            return str(self._IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def names(self, relative: str) -> list[str]:
        """Names of the entries of a directory (empty if it does not exist)."""
        path = self._path(relative)
        if not self._fs.exists(path):
            return []
        return [str(status.getPath().getName()) for status in self._fs.listStatus(path)]

    def write_text(self, relative: str, text: str) -> None:
        """Write a whole file: to a temporary name, then renamed over the old one."""
        target, tmp = self._path(relative), self._path(f"{relative}.tmp")
        stream = self._fs.create(tmp, True)
        try:
            stream.write(text.encode())
        finally:
            stream.close()
        self._fs.delete(target, False)
        if not self._fs.rename(tmp, target):
            raise OSError(f"could not rename {tmp} to {target}")

    def rename(self, source: str, target: str) -> None:
        self._fs.delete(self._path(target), False)
        self._fs.rename(self._path(source), self._path(target))

    def delete(self, relative: str = "") -> None:
        self._fs.delete(self._path(relative), True)


def query_id(files: ReadableFiles) -> str | None:
    """The id Spark gave the query when it first started on this checkpoint."""
    text = files.read_text("metadata")
    return None if text is None else str(json.loads(text.splitlines()[0])["id"])


def committed_batches(files: ReadableFiles) -> list[int]:
    """Batch ids Spark finished (its commit log), ascending."""
    return sorted(int(name) for name in files.names("commits") if name.isdigit())


def planned_batches(files: ReadableFiles) -> list[int]:
    """Batch ids Spark planned (its offset log, written before a batch runs), ascending."""
    return sorted(int(name) for name in files.names("offsets") if name.isdigit())


def batch_offsets(files: ReadableFiles, batch_id: int) -> tuple[int, Offsets] | None:
    """The batch's timestamp (epoch ms) and end offsets per Kafka partition, from its offset log."""
    text = files.read_text(f"offsets/{batch_id}")
    if text is None:
        return None
    lines = text.splitlines()
    timestamp = int(json.loads(lines[1]).get("batchTimestampMs", 0))
    offsets: Offsets = {}
    for line in lines[2:]:
        if not line.startswith("{"):
            continue
        for topic, partitions in json.loads(line).items():
            offsets.update({(topic, int(p)): int(o) for p, o in partitions.items()})
    return timestamp, offsets
