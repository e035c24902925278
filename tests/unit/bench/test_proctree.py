"""What the benchmarks read of a process tree: its CPU time, and each kind's peak memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fusion.bench.proctree import cpu_by_part, tree_cpu_seconds, watch_peaks


@contextmanager
def _child(code: str) -> Iterator[subprocess.Popen[str]]:
    """A Python child that runs ``code``, says done, then waits to be read."""
    script = f"import sys,time\n{code}\nprint('done', flush=True)\nsys.stdin.read()"
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "done\n"
        yield child
    finally:
        child.kill()
        child.wait()


def test_the_cpu_of_a_process_tree_counts_its_children() -> None:
    with _child("t=time.process_time()\nwhile time.process_time()-t<0.5: pass") as child:
        assert tree_cpu_seconds(os.getpid()) >= 0.45
        assert tree_cpu_seconds(child.pid) >= 0.45


def test_the_peak_of_a_process_is_seen_after_it_let_go_of_its_memory() -> None:
    # 300 MB touched, then freed: the high-water mark remembers it.
    with _child("b = bytearray(300 << 20)\ndel b"), watch_peaks(os.getpid()) as watch:
        watch.sample()
    assert watch.peaks["driver"] >= 300


def test_native_memory_reads_what_each_category_committed() -> None:
    from fusion.bench.jvm_memory import DIRECT, HEAP, native_memory_mb

    summary = """
Native Memory Tracking:

Total: reserved=2520MB, committed=1029MB
-                 Java Heap (reserved=512MB, committed=512MB)
                            (mmap: reserved=512MB, committed=512MB)

-                     Class (reserved=1031MB, committed=26MB)
                            (classes #26247)
-                     Other (reserved=146MB, committed=146MB)
                            (malloc=146MB #420)
"""
    assert native_memory_mb(summary) == {HEAP: 512, "Class": 26, DIRECT: 146}


def test_the_memory_report_states_the_limits_fusion_run_derives() -> None:
    from fusion.bench.jvm_memory import jvm_limits_mb, size_mb
    from fusion.core.config import PipelineConfig

    assert [size_mb(t) for t in ("512m", "1g", "2G", "1048576", "x")] == [512, 1024, 2048, 1, None]
    data = {
        "pipeline": {"name": "p", "key_field": "id", "task_chunk_bytes": 32 << 20},
        "sources": [{"name": "a"}, {"name": "b"}],
        "spark": {"master": "local[4,4]", "conf": {"spark.driver.extraJavaOptions": "-Xlog:gc"}},
    }
    assert jvm_limits_mb(PipelineConfig.model_validate(data)) == {
        "heap": 256 + 8 * 4 * 32,
        "direct": 128 + 4 * 4 * 32,
    }
    data["spark"]["conf"]["spark.driver.memory"] = "3g"
    assert jvm_limits_mb(PipelineConfig.model_validate(data))["heap"] == 3072


def test_the_cpu_split_names_each_part_and_each_server() -> None:
    spin = "t=time.process_time()\nwhile time.process_time()-t<0.3: pass"
    with _child(spin) as worker, _child(spin) as server:
        parts = cpu_by_part(worker.pid, {"elasticsearch": server.pid})
    # A Python process that is not Spark's worker counts as the run's driver.
    assert set(parts) == {"jvm", "worker", "driver", "elasticsearch"}
    assert parts["driver"] >= 0.3 and parts["elasticsearch"] >= 0.3 and parts["jvm"] == 0


def test_a_snapshot_adds_the_benchmarks_own_process_and_the_whole_machine() -> None:
    from fusion.bench.proctree import cores_between, cpu_snapshot

    with _child("") as idle:
        before = cpu_snapshot(idle.pid, {})
        spent = time.process_time()
        while time.process_time() - spent < 0.3:
            pass
        after = cpu_snapshot(idle.pid, {})
    cores = cores_between(before, after, 0.3)

    # The spin was this process's: the benchmark's part and the machine's, not the run's.
    assert cores["bench"] >= 0.8 and cores["machine"] >= 0.8
    assert cores["driver"] < 0.5 and cores["jvm"] == 0


def test_cores_are_each_parts_cpu_seconds_over_the_time_between_readings() -> None:
    from fusion.bench.proctree import cores_between

    before = {"jvm": 10.0, "kafka": 2.0}
    after = {"jvm": 25.0, "kafka": 5.0, "elasticsearch": 6.0}

    assert cores_between(before, after, 10.0) == {"jvm": 1.5, "kafka": 0.3, "elasticsearch": 0.6}
    assert cores_between(before, after, 0.0) == {}
