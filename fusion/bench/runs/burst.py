"""`fusion bench burst`: naive vs counted vs batched on the same data, against the physical floor.

For each mode, on fresh topics and indexes and the same generated dataset (every
key complete, no duplicates, so the counts are exact):

1. start the mode's queries and wait until they run;
2. produce every record, noting when the last record of each key was sent;
3. wait until every key is enriched;
4. read each enriched document's ``enriched_at`` from Elasticsearch:
   wall time = last enriched_at - first send, latency per key = its
   enriched_at - the send time of its last record;
5. take the enrichment's Elasticsearch requests from the pipeline's own counter.

The floor is the same N·K source documents plus K enriched documents
bulk-indexed straight from Python with the elasticsearch helpers: no Spark,
while the load generator sends the same records to Kafka as it does to each
mode (no pipeline reads them). Each mode's wall time is reported as a ratio
to it.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from fusion import pipeline
from fusion.bench import (
    BenchOptions,
    Dataset,
    GenOptions,
    Mode,
    PipelineProcess,
    bench_config,
    build_dataset,
    cpu_snapshot,
    enriched_times,
    generating,
    git_commit,
    machine,
    median_counter_run,
    naive,
    produce_timed,
    rounded,
    run_counter_only,
    run_floor,
    server_pids,
)
from fusion.core import CounterEngineName, PipelineConfig, Settings, now_iso
from fusion.elastic import client as es_client
from fusion.kafka import lag
from fusion.observe import Figures, percentiles
from fusion.ops import teardown
from fusion.topology import reads, topology_of

# The counter alone runs on each engine; the modes run on the default (jvm).
ENGINES: tuple[CounterEngineName, ...] = ("jvm", "python")


@dataclass
class ModeResult:
    mode: str
    keys: int
    sources: int
    es_requests: int  # lookups: GETs and _mget requests
    bulk_requests: int  # bulk writes, source and enriched documents alike
    requests_per_key: float
    wasted_requests: int
    docs_fetched: int
    wall_seconds: float
    keys_per_second: float
    latency_p50: float | None
    latency_p95: float | None
    latency_p99: float | None
    latency_min: float | None
    latency_count: int
    # From the burst's first record sent to its first key enriched: a backlog drained key by
    # key enriches some keys long before the last.
    first_key_seconds: float | None = None
    driver_python_peak_mb: int | None = None
    driver_jvm_peak_mb: int | None = None
    ratio_to_floor: float | None = None
    counters: dict[str, int] = field(default_factory=dict)
    # CPU seconds each part spent on the measured burst, from its first record sent until every
    # query had read all it was sent (:func:`fusion.bench.cpu_snapshot`: the harness's own too).
    cpu_seconds: dict[str, float] = field(default_factory=dict)


def run_mode(
    config: PipelineConfig,
    dataset: Dataset,
    mode: Mode,
    rate: float,
    workdir: Path,
    warmups: Sequence[Dataset] = (),
) -> ModeResult:
    """Run one mode over ``dataset`` on fresh topics and indexes, in its own process; measure it.

    The ``warmups`` datasets (other keys) are sent and enriched first, one after
    the other, unmeasured; the counts then cover them too, and the per-key ones
    are over all of them.
    """
    teardown.delete_all(config)
    pipeline.prepare(config)
    keys = len(dataset.expected)
    waves = [*warmups, dataset]
    es = es_client.connect(config.elasticsearch)
    only = "naive" if mode == "naive" else None
    with PipelineProcess(config, workdir, only=only) as run:
        run.wait_started()
        assert run.process is not None
        servers = server_pids(config)
        enriched = 0
        for wave in waves:
            cpu_before = cpu_snapshot(run.process.pid, servers)
            first_send, last_send = produce_timed(config, wave, rate)
            enriched += len(wave.expected)
            while _count(es, config.enriched_index) < enriched:
                run.check()
                time.sleep(0.5)
        # The documents are searchable before their batch commits; its counts come
        # with the commit, so stop only once every query committed all its input.
        queries = (naive.query(config),) if only else topology_of(config).select()
        stages = reads(queries)
        while lag.behind(config, stages) > 0:
            run.check()
            time.sleep(0.5)
        cpu_after = cpu_snapshot(run.process.pid, servers)
        cpu = {k: round(v - cpu_before.get(k, 0.0), 2) for k, v in cpu_after.items()}
        summary = run.stop()
    counts: dict[str, int] = summary["counters"]
    stored = {key: at for key, at in enriched_times(es, config).items() if key in dataset.expected}
    if len(stored) < keys:
        raise RuntimeError(f"{mode}: only {len(stored)} of {keys} keys were enriched")
    enriched_at = {key: at for key, (at, _) in stored.items()}
    wall = max(enriched_at.values()) - first_send
    # From the key's last record's Kafka timestamp, as Fusion stored it (the naive baseline
    # stores none: from when the harness sent it).
    latencies = sorted(at - (recorded or last_send[k]) for k, (at, recorded) in stored.items())
    spread = percentiles(latencies)
    figures = Figures(counts)
    requests = figures.lookups
    teardown.delete_all(config)
    return ModeResult(
        mode=mode,
        keys=keys,
        sources=len(config.sources),
        es_requests=requests,
        bulk_requests=figures.bulk_requests,
        requests_per_key=round(requests / enriched, 4),
        wasted_requests=counts.get(naive.WASTED, 0),
        docs_fetched=figures.docs_fetched,
        wall_seconds=round(wall, 3),
        keys_per_second=round(keys / wall, 1),
        latency_p50=rounded(spread["p50"]),
        latency_p95=rounded(spread["p95"]),
        latency_p99=rounded(spread["p99"]),
        latency_min=rounded(latencies[0]) if latencies else None,
        latency_count=len(latencies),
        first_key_seconds=rounded(min(enriched_at.values()) - first_send),
        driver_python_peak_mb=figures.driver_peak_mb("python"),
        driver_jvm_peak_mb=figures.driver_peak_mb("jvm"),
        counters=counts,
        cpu_seconds=cpu,
    )


def _count(es: Elasticsearch, index: str) -> int:
    # 503: the index exists but its shard has not started yet.
    found = es.options(ignore_status=(404, 503)).count(index=index)
    return int(found.get("count", 0))


def run_bench(
    settings: Settings,
    options: BenchOptions,
    on_step: Callable[[str], None] = lambda _: None,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """Every mode ``options.runs`` times, plus the floor; each reports its median run."""
    tag = uuid.uuid4().hex[:6]
    workdir = workdir or Path(tempfile.mkdtemp(prefix="fusion-bench-"))
    base = bench_config(settings, "batched", options, tag)
    gen = GenOptions(keys=options.keys, seed=options.seed, duplicate_rate=0, missing_rate=0)
    dataset = build_dataset(base, gen)
    floors = []
    runs: dict[str, list[ModeResult]] = {mode: [] for mode in options.modes}
    on_step("warming Elasticsearch up (an untimed floor run)")
    run_floor(settings, dataset, base)  # a cold node's JIT would flatter every ratio
    for run in range(options.runs):
        on_step(f"run {run + 1}/{options.runs}: floor (bulk from Python, beside the generator)")
        # The generator sends the same records meanwhile, all at once as to each mode.
        with generating(base, dataset, options.rate):
            floors.append(run_floor(settings, dataset, base))
        for mode in options.modes:
            on_step(f"run {run + 1}/{options.runs}: {mode} mode, {options.keys:,} keys")
            config = bench_config(settings, mode, options, f"{tag}{run}")
            # Same seed, same records; only the topic names differ per mode (the floor's
            # dataset stays the base's: it maps topics to sources by the base's names).
            records = build_dataset(config, gen)
            warmups = [
                build_dataset(config, replace(gen, key_prefix=f"W{n}")) for n in range(options.warm)
            ]
            runs[mode].append(run_mode(config, records, mode, options.rate, workdir, warmups))
    counters = {}
    # Spark alone over the same acks, once a run: each engine's run of it is measured beside it.
    baselines: list[dict[str, Any]] = []
    for engine in ENGINES:
        alone = []
        for run in range(options.runs):
            on_step(f"run {run + 1}/{options.runs}: the counter alone, {engine} engine")
            counter_config = bench_config(settings, "batched", options, f"{tag}c{engine}{run}")
            records = build_dataset(counter_config, gen)
            shared = baselines[run] if run < len(baselines) else None
            found = run_counter_only(counter_config, records, workdir, engine, shared)
            if shared is None:
                baselines.append(found["baseline"])
            alone.append(found)
        counters[engine] = median_counter_run(alone)
    floor = statistics.median_low(floors)
    results = {mode: _median(found) for mode, found in runs.items()}
    for result in results.values():
        result.ratio_to_floor = round(result.wall_seconds / floor, 2)
    return {
        "keys": options.keys,
        "sources": options.sources,
        "seed": options.seed,
        "runs": options.runs,
        "rate": options.rate,
        "max_offsets_per_trigger": base.pipeline.max_offsets_per_trigger,
        "warm": options.warm,
        "pipeline_set": dict(options.pipeline),
        "spark_master": settings.spark.master,
        "date": now_iso(),
        "commit": git_commit(),
        "floor_seconds": round(floor, 3),
        "floor_beside_generator": True,
        "counter_only": counters["jvm"],
        "counter_only_python": counters["python"],
        "machine": machine(settings),
        "modes": [asdict(results[m]) for m in options.modes],
    }


def _median(results: list[ModeResult]) -> ModeResult:
    """The run with the median wall time (the lower middle one of an even count)."""
    ordered = sorted(results, key=lambda r: r.wall_seconds)
    return ordered[(len(ordered) - 1) // 2]
