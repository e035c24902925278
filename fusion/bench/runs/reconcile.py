"""`fusion bench reconcile`: `fusion reconcile` over complete keys that were never enriched.

The source documents of K keys x 4 sources are bulk-indexed straight into the
pipeline's source indexes (as if their acks were lost), then `fusion
reconcile --json` runs as its own process: the benchmark times it and
watches the peak resident memory of its Python driver and its JVM. Every key
must come out enriched.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from elasticsearch import helpers

from fusion import pipeline
from fusion.bench import (
    BenchOptions,
    GenOptions,
    PipelineProcessError,
    bench_config,
    build_dataset,
    git_commit,
    machine,
    timed_command,
    write_text_files,
)
from fusion.core import Settings, now_iso
from fusion.elastic import client as es_client
from fusion.ops import teardown

SOURCES = 4


def run_reconcile(settings: Settings, keys: int = 100_000, on_step: Any = None) -> dict[str, Any]:
    """Index ``keys`` complete keys, reconcile them; the report."""
    config = bench_config(
        settings, "batched", BenchOptions(keys, SOURCES), f"r{uuid.uuid4().hex[:6]}"
    )
    dataset = build_dataset(config, GenOptions(keys=keys, duplicate_rate=0, missing_rate=0))
    workdir = Path(tempfile.mkdtemp(prefix="fusion-reconcile-bench-"))
    es = es_client.connect(config.elasticsearch)
    teardown.delete_all(config)
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
        timed = timed_command(config, workdir, "reconcile")
        enriched = timed.report["enriched"]
        if enriched != keys:
            err = workdir / "reconcile.err"
            raise PipelineProcessError(f"reconcile enriched {enriched:,} of {keys:,}", err)
    finally:
        teardown.delete_all(config)
    return {
        "kind": "reconcile",
        "keys": keys,
        "sources": SOURCES,
        "slices": timed.report["slices"],
        "enriched": enriched,
        "seconds": round(timed.seconds, 1),
        "keys_per_second": round(keys / timed.seconds),
        "driver_python_peak_mb": timed.peaks.get("driver"),
        "jvm_peak_mb": timed.peaks.get("jvm"),
        "worker_peak_mb": timed.peaks.get("worker"),
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
