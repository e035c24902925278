"""`fusion bench memory`: an executor's peak memory against the size of the records.

The same keys (4 sources each) are run through the pipeline twice: records of
about 1 KB, then of about 500 KB, all in one micro-batch. Each run is a
`fusion run` of its own (:class:`PipelineProcess`, local mode: the JVM runs
the tasks), and :func:`~fusion.bench.proctree.watch_peaks` reads the peak
resident memory of its Spark JVM and of its Python workers. With the tasks
working in chunks of ``task_chunk_bytes``, and the JVM's limits derived from
them (:mod:`fusion.spark.memory_limits`: its heap reserved at start, its
direct memory capped), those peaks should stay flat; the same two runs with a
budget larger than any task (1 GiB: a task holds all it reads, as before the
chunks; Spark's default 1 GiB heap and as much direct memory) show what the
chunks save.

The JVM also runs with Native Memory Tracking, and :class:`NativePeaks`
reports what its parts committed at most: the heap, and direct memory
(Arrow's buffers, which hold a task's chunks on their way to and from Python).
"""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError

from fusion.bench import (
    DIRECT,
    DRIVER_OPTIONS,
    HEAP,
    NMT_OPTION,
    BenchOptions,
    GenOptions,
    bench_config,
    build_dataset,
    git_commit,
    jvm_limits_mb,
    live_heap_peak_mb,
    machine,
    native_peaks,
    produce,
    started_on_fresh_topics,
    watch_peaks,
    write_text_files,
)
from fusion.core import FusionError, PipelineConfig, Settings, now_iso
from fusion.elastic import client as es_client
from fusion.kafka import lag
from fusion.observe import names
from fusion.spark import memory_limits
from fusion.topology import reads, topology_of

SOURCES = 4


UNBOUNDED = 1 << 30  # a budget no task of these runs reaches


@dataclass(frozen=True)
class MemoryOptions:
    keys: int = 200
    record_bytes: tuple[int, ...] = (1_000, 500_000)
    budgets: tuple[int | None, ...] = (None, UNBOUNDED)  # None: the default task_chunk_bytes
    # The JVM's maximum heap (spark.driver.memory; local mode runs the tasks in it).
    heap: str | None = None


@dataclass(frozen=True)
class MemoryRun:
    budget_bytes: int
    record_bytes: int
    records: int
    megabytes_in: float
    python_worker_peak_mb: int | None
    jvm_peak_mb: int | None
    jvm_live_heap_peak_mb: int | None
    jvm_heap_committed_peak_mb: int | None
    jvm_direct_peak_mb: int | None
    driver_python_peak_mb: int | None
    # The limits the JVM ran with (fusion.spark.memory_limits, or --heap).
    jvm_heap_limit_mb: int | None
    jvm_direct_limit_mb: int | None
    spilled_records: int
    enriched: int
    seconds: float


def run_memory(
    settings: Settings, options: MemoryOptions = MemoryOptions(), on_step: Any = None
) -> dict[str, Any]:
    """Every (budget, record size) run, in that order; the report."""
    runs = []
    for budget in options.budgets:
        for size in options.record_bytes:
            if on_step is not None:
                label = "default" if budget is None else f"{budget >> 20} MiB"
                on_step(f"budget {label}, records of {size:,} bytes")
            try:
                runs.append(asdict(_run(settings, options, size, budget)))
            except (FusionError, ApiError, TransportError) as exc:  # a failed run is a result too
                runs.append({"budget_bytes": budget, "record_bytes": size, "error": str(exc)})
    return {
        "kind": "memory",
        "keys": options.keys,
        "sources": SOURCES,
        "heap": options.heap or "derived from task_chunk_bytes (fusion.spark.memory_limits)",
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "runs": runs,
    }


def _config(
    settings: Settings, options: MemoryOptions, record_bytes: int, budget: int | None, gc_log: Path
) -> PipelineConfig:
    tag = f"m{uuid.uuid4().hex[:6]}"
    base = bench_config(settings, "batched", BenchOptions(options.keys, SOURCES), tag)
    data = base.model_dump(mode="python")
    # The JVM's resident peak is mostly the collector's choice (the heap grows to its
    # maximum under allocation, live or not); its log says what was live after each GC.
    data["spark"]["conf"][DRIVER_OPTIONS] = f"-Xlog:gc:file={gc_log} {NMT_OPTION}"
    if options.heap is not None:
        data["spark"]["conf"]["spark.driver.memory"] = options.heap
    elif budget == UNBOUNDED:
        # Before the chunks, the JVM's limits: Spark's default heap and as much direct memory.
        data["spark"]["conf"]["spark.driver.memory"] = "1g"
    if budget == UNBOUNDED:
        data["spark"]["conf"][DRIVER_OPTIONS] += f" {memory_limits.DIRECT_OPTION}=" + (
            options.heap or "1g"
        )
    data["pipeline"]["max_record_bytes"] = max(base.max_record_bytes, 2 * record_bytes)
    if budget is not None:
        data["pipeline"]["task_chunk_bytes"] = budget
    return PipelineConfig.model_validate(data)


def _run(
    settings: Settings, options: MemoryOptions, record_bytes: int, budget: int | None
) -> MemoryRun:
    keys = options.keys
    gc_log = Path(tempfile.mkdtemp(prefix="fusion-memory-gc-")) / "gc.log"
    config = _config(settings, options, record_bytes, budget, gc_log)
    gen = GenOptions(keys=keys, duplicate_rate=0, missing_rate=0, pad_bytes=record_bytes)
    dataset = build_dataset(config, gen)
    es = es_client.connect(config.elasticsearch)
    with started_on_fresh_topics(config, "fusion-memory-") as run:
        assert run.process is not None
        with watch_peaks(run.process.pid) as watch, native_peaks(run.process.pid) as native:
            started = time.monotonic()
            produce(config, dataset.records)
            stages = reads(topology_of(config).select())
            while _enriched(es, config) < keys or lag.behind(config, stages) > 0:
                run.check()
                time.sleep(0.5)
            seconds = time.monotonic() - started
            enriched = _enriched(es, config)
            watch.sample()
        summary = run.stop()
    counts: dict[str, int] = summary["counters"]
    limits = jvm_limits_mb(config)
    return MemoryRun(
        budget_bytes=config.pipeline.task_chunk_bytes,
        record_bytes=record_bytes,
        records=len(dataset.records),
        megabytes_in=round(sum(len(v) for _, _, v in dataset.records) / 1e6, 1),
        python_worker_peak_mb=watch.peaks.get("worker"),
        jvm_peak_mb=watch.peaks.get("jvm"),
        jvm_live_heap_peak_mb=live_heap_peak_mb(gc_log),
        jvm_heap_committed_peak_mb=native.peaks.get(HEAP),
        jvm_direct_peak_mb=native.peaks.get(DIRECT),
        driver_python_peak_mb=watch.peaks.get("driver"),
        jvm_heap_limit_mb=limits.get("heap"),
        jvm_direct_limit_mb=limits.get("direct"),
        spilled_records=counts.get(names.TASKS_SPILLED, 0),
        enriched=enriched,
        seconds=round(seconds, 1),
    )


def _enriched(es: Any, config: PipelineConfig) -> int:
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index)
    return int(found.get("count", 0))


def markdown(report: dict[str, Any]) -> str:
    """The memory report as Markdown: one row per run."""
    lines = [
        f"# Memory: {report['keys']:,} keys x {report['sources']} sources, "
        f"one micro-batch (commit {report['commit']})",
        "",
        f"JVM heap: {report.get('heap', '1g')}.",
        "",
        "The limits (in brackets) are those `fusion run` derives from `task_chunk_bytes` and "
        "the task slots (`fusion.spark.memory_limits`), unless `--heap` sets the heap; "
        "`fusion run` commits the heap when it starts.",
        "",
        "Peak resident memory (`VmHWM`) of `fusion run`'s processes; local mode, "
        "so the JVM runs the tasks. The JVM's heap and direct memory: the most each "
        "committed (Native Memory Tracking, sampled each second).",
        "",
        "| task_chunk_bytes | record | records | MB in | Python worker MB | JVM MB "
        "| JVM heap committed MB (limit) | JVM direct MB (limit) | JVM heap after GC MB "
        "| driver Python MB | spilled records | enriched | s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["runs"]:
        if "error" in r:
            budget = "default" if r["budget_bytes"] is None else f"{r['budget_bytes'] >> 20} MiB"
            failed = f"failed: {r['error'].splitlines()[0]}"
            lines.append(f"| {budget} | {r['record_bytes']:,} B | {failed} ||||||||||| ")
            continue
        lines.append(
            f"| {r['budget_bytes'] >> 20} MiB | {r['record_bytes']:,} B | {r['records']:,} "
            f"| {r['megabytes_in']:,} | {r['python_worker_peak_mb']} | {r['jvm_peak_mb']} "
            f"| {r.get('jvm_heap_committed_peak_mb')} ({r.get('jvm_heap_limit_mb')}) "
            f"| {r.get('jvm_direct_peak_mb')} ({r.get('jvm_direct_limit_mb')}) "
            f"| {r['jvm_live_heap_peak_mb']} | {r['driver_python_peak_mb']} "
            f"| {r['spilled_records']:,} | {r['enriched']:,} | {r['seconds']} |"
        )
    return "\n".join([*lines, ""])


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """``<out_dir>/<timestamp>-memory-k<keys>.{json,md}``."""
    return write_text_files(out_dir, f"memory-k{report['keys']}", report, markdown(report))
