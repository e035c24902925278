"""What the Spark JVM was allowed and used: its limits, its live heap, its native memory."""

from __future__ import annotations

import re
import shutil
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path

from fusion.bench.proctree import kind_of, sampling
from fusion.core import PipelineConfig
from fusion.core.machine import procfs
from fusion.spark import memory_limits

_SIZE = re.compile(r"^(\d+)([kmgt]?)b?$", re.IGNORECASE)


_MB_PER_UNIT = {"": 1 / (1 << 20), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1 << 20}


def size_mb(text: str) -> int | None:
    """A JVM size (``512m``, ``1g``, ``1048576``) in MiB."""
    found = _SIZE.match(text.strip())
    if found is None:
        return None
    return int(int(found.group(1)) * _MB_PER_UNIT[found.group(2).lower()])


def jvm_limits_mb(config: PipelineConfig) -> dict[str, int | None]:
    """The heap and direct-memory limits ``fusion run`` gives the local JVM that runs the tasks."""
    conf = memory_limits.with_task_limits(
        config.spark.conf, config.spark.master, config.pipeline.task_chunk_bytes
    )
    direct = re.search(rf"{memory_limits.DIRECT_OPTION}=(\S+)", conf.get(DRIVER_OPTIONS, ""))
    return {
        "heap": size_mb(conf.get("spark.driver.memory", "1g")),
        "direct": size_mb(direct.group(1)) if direct else None,
    }


DRIVER_OPTIONS = "spark.driver.extraJavaOptions"


_AFTER_GC = re.compile(r"\d+M->(\d+)M\(\d+M\)")


def live_heap_peak_mb(gc_log: Path) -> int | None:
    """The most heap in use right after a collection (what was live), from a ``-Xlog:gc`` file."""
    if not gc_log.exists():
        return None
    after = [int(m.group(1)) for m in _AFTER_GC.finditer(gc_log.read_text(errors="replace"))]
    return max(after, default=None)


NMT_OPTION = "-XX:NativeMemoryTracking=summary"


HEAP, DIRECT = "Java Heap", "Other"  # NMT's categories; "Other" is Unsafe and direct buffers


_NMT_LINE = re.compile(r"-\s+([A-Za-z ]+?) \(reserved=\d+MB, committed=(\d+)MB")


def native_memory_mb(summary: str) -> dict[str, int]:
    """Committed MB per category of ``jcmd <pid> VM.native_memory summary scale=MB``."""
    return {name: int(mb) for name, mb in _NMT_LINE.findall(summary)}


class NativePeaks:
    """The most each NMT category of the Spark JVM under ``root`` committed while sampled."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peaks: dict[str, int] = {}
        self.jcmd = _jdk_tool("jcmd")

    def sample(self) -> None:
        if self.jcmd is None:  # a Java runtime without the JDK's tools: no breakdown
            return
        for pid in procfs.descendants(self.root):
            if kind_of(pid) != "jvm":
                continue
            command = [self.jcmd, str(pid), "VM.native_memory", "summary", "scale=MB"]
            found = subprocess.run(command, capture_output=True, text=True, check=False)
            for name, mb in native_memory_mb(found.stdout).items():
                self.peaks[name] = max(mb, self.peaks.get(name, 0))


def _jdk_tool(name: str) -> str | None:
    """``name`` of the JDK that runs Spark (its ``jcmd`` attaches to that JVM), else on PATH."""
    from fusion.infra import java_home

    tool = java_home() / "bin" / name
    return str(tool) if tool.is_file() else shutil.which(name)


def native_peaks(root: int, every: float = 1.0) -> AbstractContextManager[NativePeaks]:
    """Sample the JVM's native memory once every ``every`` seconds while the block runs."""
    return sampling(NativePeaks(root), every, "native-peaks")
