"""`fusion bench status`: `fusion status`'s time and driver memory against the keys in state.

For each size, the counter alone (stages layout) counts one ack per key, from
one of the four sources, so every key stays pending in its state. Then
`fusion status --json` runs as its own process, as an operator runs it: the
benchmark times it and watches the peak resident memory of its Python driver
and of its JVM (local mode: the JVM also runs the aggregate's tasks). The
pending keys it reports must be the keys produced. With the aggregate on the
executors (:func:`fusion.counter.state.summary`) the driver's memory stays flat
whatever the number of keys.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from acks import Ack
from fusion import pipeline
from fusion.bench import (
    BenchOptions,
    PipelineProcess,
    PipelineProcessError,
    bench_config,
    git_commit,
    machine,
    timed_command,
    write_text_files,
)
from fusion.core import PipelineConfig, Settings, now_iso, now_utc
from fusion.kafka import Publisher
from fusion.ops import teardown

SOURCES = 4


@dataclass(frozen=True)
class StatusOptions:
    keys: tuple[int, ...] = (100_000, 1_000_000)


@dataclass(frozen=True)
class StatusRun:
    keys_in_state: int
    pending_keys: int
    status_seconds: float
    driver_python_peak_mb: int | None
    jvm_peak_mb: int | None
    count_seconds: float  # the counter's run that filled the state (not the measure)


def run_status(
    settings: Settings, options: StatusOptions = StatusOptions(), on_step: Any = None
) -> dict[str, Any]:
    """One run per size in ``options.keys``; the report."""
    runs = []
    for keys in options.keys:
        if on_step is not None:
            on_step(f"{keys:,} keys in state")
        runs.append(asdict(_run(settings, keys)))
    return {
        "kind": "status",
        "sources": SOURCES,
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "spark_master": settings.spark.master,
        "runs": runs,
    }


def _config(settings: Settings, keys: int) -> PipelineConfig:
    tag = f"s{uuid.uuid4().hex[:6]}"
    base = bench_config(settings, "batched", BenchOptions(keys, SOURCES), tag)
    section = base.pipeline.model_copy(
        update={"layout": "stages", "enrich_in": "enricher", "max_offsets_per_trigger": 250_000}
    )
    return base.model_copy(update={"pipeline": section})


def _run(settings: Settings, keys: int) -> StatusRun:
    config = _config(settings, keys)
    workdir = Path(tempfile.mkdtemp(prefix="fusion-status-bench-"))
    teardown.delete_all(config)
    pipeline.prepare(config)
    try:
        source = config.sources[0]
        _produce_acks(config, source.name, config.topic_of(source), keys)
        started = time.monotonic()
        with PipelineProcess(config, workdir, only="counter", stop_when_idle=5) as run:
            run.finish(timeout=3600)
        count_seconds = time.monotonic() - started
        timed = timed_command(config, workdir, "status")
    finally:
        teardown.delete_all(config)
    counter = timed.report["counter"]
    if counter["pending_keys"] != keys:
        raise PipelineProcessError(
            f"`fusion status` reported {counter['pending_keys']:,} pending keys of {keys:,}",
            workdir / "status.err",
        )
    return StatusRun(
        keys_in_state=counter["keys_in_state"],
        pending_keys=counter["pending_keys"],
        status_seconds=round(timed.seconds, 1),
        driver_python_peak_mb=timed.peaks.get("driver"),
        jvm_peak_mb=timed.peaks.get("jvm"),
        count_seconds=round(count_seconds, 1),
    )


def _produce_acks(config: PipelineConfig, source: str, topic: str, keys: int) -> None:
    """One ack per key, all from ``source``: every key waits for the other sources."""
    publisher = Publisher(config.kafka, {"linger.ms": 20, "batch.num.messages": 10_000})
    acked_at = now_utc()
    for n in range(keys):
        key = f"S-{n:08d}"
        ack = Ack(
            key=key, source=source, index=topic, doc_id=key, seq_no=n, primary_term=1,
            version=1, topic=topic, partition=0, offset=n, acked_at=acked_at,
        )  # fmt: skip
        publisher.send(config.acks_topic, key, ack.to_bytes())
    publisher.flush()


def markdown(report: dict[str, Any]) -> str:
    master = report.get("spark_master", "local")
    where = (
        "local mode, so its JVM runs the aggregate"
        if master.startswith("local")
        else f"Spark master {master}: the executors run the aggregate, the driver's JVM no task"
    )
    lines = [
        f"# `fusion status` against the keys in state (commit {report['commit']})",
        "",
        "Each key holds one of 4 sources (pending). `fusion status --json` as its own "
        f"process; peak resident memory (`VmHWM`); {where}.",
        "",
        "| keys in state | pending keys | status s | driver Python MB | JVM MB "
        "| counting them took s |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['keys_in_state']:,} | {r['pending_keys']:,} | {r['status_seconds']} "
            f"| {r['driver_python_peak_mb']} | {r['jvm_peak_mb']} | {r['count_seconds']} |"
        )
    return "\n".join([*lines, ""])


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """``<out_dir>/<timestamp>-status.{json,md}``."""
    return write_text_files(out_dir, "status", report, markdown(report))
