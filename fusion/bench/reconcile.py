"""`fusion bench --reconcile`: `fusion reconcile` over complete keys that were never enriched.

The source documents of K keys x 4 sources are bulk-indexed straight into the
pipeline's source indexes (as if their acks were lost), then `fusion
reconcile --json` runs as its own process: the benchmark times it and
watches the peak resident memory of its Python driver and its JVM. Every key
must come out enriched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from elasticsearch import helpers

from fusion import pipeline
from fusion.bench.burst import BenchOptions, bench_config
from fusion.bench.errors import PipelineProcessError
from fusion.bench.generator import GenOptions, build_dataset
from fusion.bench.proctree import watch_peaks
from fusion.bench.report import git_commit, machine, write_text_files
from fusion.core.config_file import write_config
from fusion.core.events import now_iso
from fusion.core.settings import Settings
from fusion.runtime import clients, topology

SOURCES = 4


def run_reconcile(settings: Settings, keys: int = 100_000, on_step: Any = None) -> dict[str, Any]:
    """Index ``keys`` complete keys, reconcile them; the report."""
    config = bench_config(
        settings, "batched", BenchOptions(keys, SOURCES), f"r{uuid.uuid4().hex[:6]}"
    )
    dataset = build_dataset(config, GenOptions(keys=keys, duplicate_rate=0, missing_rate=0))
    workdir = Path(tempfile.mkdtemp(prefix="fusion-reconcile-bench-"))
    es = clients.elasticsearch(config.elasticsearch)
    topology.delete_all(config)
    pipeline.prepare(config)
    try:
        if on_step is not None:
            on_step(f"indexing {len(dataset.records):,} source documents")
        by_topic = {config.topic_of(s): config.index_of(s) for s in config.sources}
        actions = (
            {"_index": by_topic[topic], "_id": key, "_source": json.loads(value)}
            for topic, key, value in dataset.records
        )
        helpers.bulk(es, actions, chunk_size=config.pipeline.bulk_chunk, max_chunk_bytes=50 << 20)
        es.indices.refresh(index=list(by_topic.values()))
        if on_step is not None:
            on_step(f"fusion reconcile over {keys:,} keys")
        config_file = workdir / "reconcile.toml"
        write_config(config, config_file)
        command = [sys.executable, "-m", "fusion", "reconcile", "--json"]
        err = workdir / "reconcile.err"
        try:
            with err.open("wb") as stderr:
                started = time.monotonic()
                process = subprocess.Popen(
                    [*command, "--config", str(config_file)], stdout=subprocess.PIPE, stderr=stderr
                )
                with watch_peaks(process.pid) as watch:
                    out, _ = process.communicate(timeout=3600)
                    watch.sample()
                seconds = time.monotonic() - started
        finally:
            config_file.unlink(missing_ok=True)  # it holds the connection secrets
        if process.returncode != 0:
            raise PipelineProcessError(f"`fusion reconcile` exited with {process.returncode}", err)
        text = out.decode()
        report = json.loads(text[text.index("{") :])
        if report["enriched"] != keys:
            raise PipelineProcessError(
                f"reconcile enriched {report['enriched']:,} of {keys:,}", err
            )
    finally:
        topology.delete_all(config)
    return {
        "kind": "reconcile",
        "keys": keys,
        "sources": SOURCES,
        "slices": report["slices"],
        "enriched": report["enriched"],
        "seconds": round(seconds, 1),
        "keys_per_second": round(keys / seconds),
        "driver_python_peak_mb": watch.peaks.get("driver"),
        "jvm_peak_mb": watch.peaks.get("jvm"),
        "worker_peak_mb": watch.peaks.get("worker"),
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
    }


def markdown(report: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"# `fusion reconcile` over {report['keys']:,} keys (commit {report['commit']})",
            "",
            f"{report['keys']:,} keys x {report['sources']} sources in Elasticsearch, none "
            f"enriched; `fusion reconcile --json` as its own process, {report['slices']} slices.",
            "",
            "| keys | enriched | s | keys/s | driver Python MB | JVM MB | Python worker MB |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            f"| {report['keys']:,} | {report['enriched']:,} | {report['seconds']} "
            f"| {report['keys_per_second']:,} | {report['driver_python_peak_mb']} "
            f"| {report['jvm_peak_mb']} | {report['worker_peak_mb']} |",
            "",
        ]
    )


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """``<out_dir>/<timestamp>-reconcile-k<keys>.{json,md}``."""
    return write_text_files(out_dir, f"reconcile-k{report['keys']}", report, markdown(report))
