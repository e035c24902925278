"""`fusion bench`: naive vs counted vs batched on the same data, against the physical floor.

For each mode, on fresh topics and indexes and the same generated dataset
(every key complete, no duplicates, so the counts are exact):

1. start the mode's queries and wait until they run;
2. produce every record, noting when the last record of each key was sent;
3. wait until every key is enriched;
4. read each enriched document's ``enriched_at`` from Elasticsearch:
   wall time = last enriched_at - first send, latency per key = its
   enriched_at - the send time of its last record;
5. take the Elasticsearch requests of the matching/enrichment side from the
   pipeline's own request counter.

The floor is the same N·K source documents plus K enriched documents
bulk-indexed straight from Python with the elasticsearch helpers: no Kafka,
no Spark. Each mode's wall time is reported as a ratio to it.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from elasticsearch import Elasticsearch, helpers

from acks.contract import Ack
from fusion import pipeline
from fusion.bench import naive
from fusion.bench.generator import Dataset, GenOptions, build_dataset
from fusion.bench.process import PipelineProcess
from fusion.core.config import PipelineConfig
from fusion.core.events import now_iso, now_utc
from fusion.core.settings import Settings
from fusion.enricher.document import FoundDoc, build_enriched
from fusion.infra.artifacts import ELASTICSEARCH_VERSION, KAFKA_VERSION
from fusion.runtime import clients, lag, topology
from fusion.runtime.metrics import percentiles
from fusion.runtime.producer import Publisher

Mode = Literal["naive", "counted", "batched"]
MODES: tuple[Mode, ...] = ("naive", "counted", "batched")
SOURCE_NAMES = [
    "billing", "insurance", "medicine", "treatment", "lab", "pharmacy", "radiology", "admission",
]  # fmt: skip
_PIPELINE = {
    "naive": {},  # run as `fusion run --only naive`: see run_mode
    "counted": {"lookup": "per-source"},
    "batched": {"lookup": "batched"},
}


@dataclass(frozen=True)
class BenchOptions:
    keys: int
    sources: int
    modes: tuple[Mode, ...] = MODES
    seed: int = 42
    runs: int = 1
    # Records per second to produce at; 0 sends everything at once (a burst).
    rate: float = 0.0
    # Records per micro-batch and query (the pipeline's default when None).
    max_offsets: int | None = None


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
    driver_python_peak_mb: int | None = None
    driver_jvm_peak_mb: int | None = None
    ratio_to_floor: float | None = None
    counters: dict[str, int] = field(default_factory=dict)


def bench_config(settings: Settings, mode: Mode, options: BenchOptions, tag: str) -> PipelineConfig:
    """A pipeline of ``options.sources`` sources, named for one mode of one run, on fresh topics."""
    sources = options.sources
    names = SOURCE_NAMES[:sources] if sources <= len(SOURCE_NAMES) else [
        f"s{i}" for i in range(1, sources + 1)
    ]  # fmt: skip
    name = f"bench-{mode}-{tag}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {"name": name, "key_field": "txn_id", **_PIPELINE[mode]}
    if options.max_offsets:
        data["pipeline"]["max_offsets_per_trigger"] = options.max_offsets
    data["sources"] = [{"name": n, "topic": f"{name}.{n}"} for n in names]
    return PipelineConfig.model_validate(data)


def run_mode(
    config: PipelineConfig, dataset: Dataset, mode: Mode, rate: float, workdir: Path
) -> ModeResult:
    """Run one mode over ``dataset`` on fresh topics and indexes, in its own process; measure it."""
    topology.delete_all(config)
    pipeline.prepare(config)
    keys = len(dataset.expected)
    es = clients.elasticsearch(config.elasticsearch)
    only = "naive" if mode == "naive" else None
    with PipelineProcess(config, workdir, only=only) as run:
        run.wait_started()
        first_send, last_send = produce_timed(config, dataset, rate)
        while _count(es, config.enriched_index) < keys:
            run.check()
            time.sleep(0.5)
        # The documents are searchable before their batch commits; its counts come
        # with the commit, so stop only once every query committed all its input.
        selection = naive.selection() if only else pipeline.select(config, None)
        stages = selection.queries(config)
        while lag.behind(config, stages) > 0:
            run.check()
            time.sleep(0.5)
        summary = run.stop()
    counts: dict[str, int] = summary["counters"]
    enriched_at = _enriched_times(es, config)
    if len(enriched_at) < keys:
        raise RuntimeError(f"{mode}: only {len(enriched_at)} of {keys} keys were enriched")
    wall = max(enriched_at.values()) - first_send
    latencies = sorted(enriched_at[k] - last_send[k] for k in dataset.expected)
    spread = percentiles(latencies)
    requests = counts.get("enricher.es_requests", 0)
    topology.delete_all(config)
    return ModeResult(
        mode=mode,
        keys=keys,
        sources=len(config.sources),
        es_requests=requests,
        bulk_requests=sum(v for k, v in counts.items() if k.endswith("bulk_requests")),
        requests_per_key=round(requests / keys, 4),
        wasted_requests=counts.get("naive.wasted", 0),
        docs_fetched=counts.get("enricher.docs_fetched", 0),
        wall_seconds=round(wall, 3),
        keys_per_second=round(keys / wall, 1),
        latency_p50=_round(spread["p50"]),
        latency_p95=_round(spread["p95"]),
        latency_p99=_round(spread["p99"]),
        latency_min=_round(latencies[0]) if latencies else None,
        latency_count=len(latencies),
        driver_python_peak_mb=counts.get("driver.python_peak_mb"),
        driver_jvm_peak_mb=counts.get("driver.jvm_peak_mb"),
        counters=counts,
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _count(es: Elasticsearch, index: str) -> int:
    # 503: the index exists but its shard has not started yet.
    found = es.options(ignore_status=(404, 503)).count(index=index)
    return int(found.get("count", 0))


def produce_timed(
    config: PipelineConfig, dataset: Dataset, rate: float
) -> tuple[float, dict[str, float]]:
    """Send the records, at ``rate`` per second if set; return first and per-key last send time."""
    publisher = Publisher(config.kafka, {"linger.ms": 5, "batch.num.messages": 10_000})
    last_send: dict[str, float] = {}
    first = time.time()
    # Pace in steps of up to 100 records, at least 50 steps a second.
    every = max(1, min(100, int(rate / 50)))
    for sent, (topic, key, value) in enumerate(dataset.records):
        if rate and sent % every == 0:
            # Ahead of schedule means wait for it.
            ahead = first + sent / rate - time.time()
            if ahead > 0:
                time.sleep(ahead)
        publisher.send(topic, key, value)
        last_send[key] = time.time()
    publisher.flush()
    return first, last_send


def _enriched_times(es: Elasticsearch, config: PipelineConfig) -> dict[str, float]:
    es.indices.refresh(index=config.enriched_index)
    times = {}
    for hit in helpers.scan(
        es, index=config.enriched_index, _source=["fusion.enriched_at"], size=5000
    ):
        stamp = hit["_source"]["fusion"]["enriched_at"]
        times[hit["_id"]] = datetime.fromisoformat(stamp).timestamp()
    return times


def run_counter_only(config: PipelineConfig, dataset: Dataset, workdir: Path) -> dict[str, Any]:
    """The counter alone over one ack per record: acks per second of Spark processing time.

    The acks are produced first, twice: a warm-up wave on other keys, then the
    measured one. The counter reads one wave's worth per micro-batch, so its
    first batch (in a cold JVM: class loading, code generation, JIT) takes the
    warm-up wave; the rate is the measured wave's acks over the micro-batch
    time after that first batch (Spark's own durations, so query start-up and
    idle triggers do not count). The cold first batch is reported too.
    """
    topology.delete_all(config)
    config = config.model_copy(
        update={
            "pipeline": config.pipeline.model_copy(
                update={"max_offsets_per_trigger": len(dataset.records)}
            )
        }
    )
    pipeline.prepare(config)
    by_topic = {config.topic_of(s): s.name for s in config.sources}
    publisher = Publisher(config.kafka, {"linger.ms": 20, "batch.num.messages": 10_000})
    acked_at = now_utc()
    for suffix in ("~warmup", ""):
        for offset, (topic, key, _) in enumerate(dataset.records):
            ack = Ack(
                key=key + suffix, source=by_topic[topic], index=topic, doc_id=key + suffix,
                seq_no=offset, primary_term=1, version=1, topic=topic, partition=0,
                offset=offset, acked_at=acked_at,
            )  # fmt: skip
            publisher.send(config.acks_topic, key + suffix, ack.to_bytes())
    publisher.flush()
    # It stops by itself once it read every ack and saw none for 3 s: by then
    # Spark has reported the progress of each batch that read acks.
    with PipelineProcess(config, workdir, only="counter", stop_when_idle=3) as run:
        counts: dict[str, int] = run.finish()["counters"]
    topology.delete_all(config)
    rows, busy = counts.get("input.counter", 0), counts.get("busy_ms.counter", 0)
    cold_rows, cold_ms = (
        counts.get("first_input.counter", 0),
        counts.get("first_busy_ms.counter", 0),
    )
    warm_rows, warm_seconds = rows - cold_rows, (busy - cold_ms) / 1000
    return {
        "operator": "transformWithState (JVM processor)",
        "acks": warm_rows,
        "fired": counts.get("counter.fired", 0) // 2,
        "seconds": round(warm_seconds, 3),
        "acks_per_second": round(warm_rows / warm_seconds) if warm_seconds else 0,
        "cold_first_batch": {
            "acks": cold_rows,
            "seconds": round(cold_ms / 1000, 3),
            "acks_per_second": round(cold_rows * 1000 / cold_ms) if cold_ms else 0,
        },
    }


def run_floor(settings: Settings, dataset: Dataset, config: PipelineConfig) -> float:
    """Seconds to bulk-index the N·K source documents and K enriched ones straight from Python."""
    es = clients.elasticsearch(settings.elasticsearch)
    prefix = f"bench-floor-{uuid.uuid4().hex[:8]}"
    by_topic = {config.topic_of(s): s.name for s in config.sources}
    now = now_iso()
    enriched = [
        build_enriched(
            config.key_field,
            key,
            {name: FoundDoc(doc[name], 1) for name in config.source_names},
            now,
            now,
        )
        for key, doc in dataset.expected.items()
    ]
    started = time.monotonic()
    actions = [
        {"_index": f"{prefix}-{by_topic[topic]}", "_id": key, "_source": json.loads(value)}
        for topic, key, value in dataset.records
    ] + [
        {"_index": f"{prefix}-enriched", "_id": doc[config.key_field], "_source": doc}
        for doc in enriched
    ]
    # As fast as the node takes them: no refresh per request, one refresh at the end.
    helpers.bulk(es, actions, chunk_size=config.pipeline.bulk_chunk, max_chunk_bytes=50 << 20)
    es.indices.refresh(index=f"{prefix}-*")
    elapsed = time.monotonic() - started
    es.options(ignore_status=404).indices.delete(index=f"{prefix}-*")
    return elapsed


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
        on_step(f"run {run + 1}/{options.runs}: floor (bulk from Python)")
        floors.append(run_floor(settings, dataset, base))
        for mode in options.modes:
            on_step(f"run {run + 1}/{options.runs}: {mode} mode, {options.keys:,} keys")
            config = bench_config(settings, mode, options, f"{tag}{run}")
            # Same seed, same records; only the topic names differ per mode.
            dataset = build_dataset(config, gen)
            runs[mode].append(run_mode(config, dataset, mode, options.rate, workdir))
    on_step("the counter alone")
    counter_config = bench_config(settings, "batched", options, f"{tag}c")
    counter = run_counter_only(counter_config, build_dataset(counter_config, gen), workdir)
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
        "spark_master": settings.spark.master,
        "date": now_iso(),
        "commit": git_commit(),
        "floor_seconds": round(floor, 3),
        "counter_only": counter,
        "machine": machine(),
        "modes": [asdict(results[m]) for m in options.modes],
    }


def _median(results: list[ModeResult]) -> ModeResult:
    """The run with the median wall time (the lower middle one of an even count)."""
    ordered = sorted(results, key=lambda r: r.wall_seconds)
    return ordered[(len(ordered) - 1) // 2]


def git_commit() -> str | None:
    """The checkout's commit, ``+changes`` if the tree differs from it (None outside git)."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return None
    changed = git("status", "--porcelain", "-uno", "--", "fusion", "indexers", "acks")
    return commit + ("+changes" if changed else "")


def machine() -> dict[str, Any]:
    import pyspark

    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "kafka": KAFKA_VERSION,
        "elasticsearch": ELASTICSEARCH_VERSION,
    }


def markdown(report: dict[str, Any]) -> str:
    n, k = report["sources"], report["keys"]
    pace = f"produced at {report['rate']:,.0f} records/s" if report.get("rate") else "burst"
    machine = report["machine"]
    lines = [
        f"{k:,} keys x {n} sources ({pace}), floor {report['floor_seconds']:.2f} s "
        f"(N·K + K documents bulk-indexed from Python), {machine['cores']} cores",
        "",
        f"{report.get('date', '?')}, commit {report.get('commit') or '?'}, "
        f"Spark master {report.get('spark_master', '?')}, median of {report['runs']} run(s); "
        f"pyspark {machine['pyspark']}, Kafka {machine['kafka']}, "
        f"Elasticsearch {machine['elasticsearch']}, Python {machine['python']}",
        "",
        "| mode | ES lookups | per key | wasted | bulk writes | docs fetched | wall s | x floor "
        "| keys/s | p50 s | p95 s | p99 s | driver MB (Python / JVM) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    counter = report.get("counter_only")
    for m in report["modes"]:
        lines.append(
            f"| {m['mode']} | {m['es_requests']:,} | {m['requests_per_key']} "
            f"| {m['wasted_requests']:,} | {m.get('bulk_requests', 0):,} | {m['docs_fetched']:,} "
            f"| {m['wall_seconds']:.1f} | {m['ratio_to_floor']} | {m['keys_per_second']:,} "
            f"| {m['latency_p50']} | {m['latency_p95']} | {m['latency_p99']} "
            f"| {m.get('driver_python_peak_mb')} / {m.get('driver_jvm_peak_mb')} |"
        )
    if counter:
        lines += [
            "",
            f"counter alone: {counter['acks']:,} acks in {counter['seconds']} s of micro-batch "
            f"time = {counter['acks_per_second']:,} acks/s ({counter['fired']:,} keys fired); "
            f"its first batch, in a cold JVM: {_cold(counter)}",
        ]
    return "\n".join(lines) + "\n"


def _cold(counter: dict[str, Any]) -> str:
    cold = counter.get("cold_first_batch") or {}
    rate = cold.get("acks_per_second", 0)
    return f"{cold.get('acks', 0):,} acks in {cold.get('seconds')} s = {rate:,} acks/s"


def chart(report: dict[str, Any], path: Path) -> None:
    """Requests per key and wall time vs floor, per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m["mode"] for m in report["modes"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.bar(modes, [m["requests_per_key"] for m in report["modes"]], color="#4c72b0")
    left.set_title("Elasticsearch requests per enriched key")
    left.set_yscale("symlog", linthresh=0.01)
    for i, m in enumerate(report["modes"]):
        left.annotate(f"{m['requests_per_key']:g}", (i, m["requests_per_key"]), ha="center",
                      va="bottom")  # fmt: skip
    right.bar(modes, [m["ratio_to_floor"] for m in report["modes"]], color="#dd8452")
    right.axhline(1.0, color="black", linewidth=1, linestyle="--", label="floor")
    right.set_title("end-to-end wall time / floor")
    right.legend()
    fig.suptitle(f"{report['keys']:,} keys x {report['sources']} sources")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path, Path]:
    name = f"k{report['keys']}-n{report['sources']}"
    return write_files(out_dir, name, report, markdown(report), chart)


def write_files(
    out_dir: Path,
    name: str,
    report: dict[str, Any],
    text: str,
    draw: Callable[[dict[str, Any], Path], None],
) -> tuple[Path, Path, Path]:
    """``<out_dir>/<timestamp>-<name>.{json,md,png}``: the report, its Markdown, its chart."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = out_dir / f"{stamp}-{name}"
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path, png_path = (base.with_suffix(s) for s in (".json", ".md", ".png"))
    json_path.write_text(json.dumps(report, indent=2))
    md_path.write_text(text)
    draw(report, png_path)
    return json_path, md_path, png_path


# (keys, sources) points of the scaling curve: K grows at N = 4, N grows at K = 14,000.
SCALE_POINTS = ((1_000, 4), (14_000, 4), (100_000, 4), (14_000, 2), (14_000, 8))
# Naive mode sends K·N·(N-1) single GETs; above this many it is left out of a point.
NAIVE_BUDGET = 500_000


def run_scale(
    settings: Settings,
    points: tuple[tuple[int, int], ...] = SCALE_POINTS,
    on_step: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    reports = []
    for keys, sources in points:
        modes = tuple(
            m for m in MODES if m != "naive" or keys * sources * (sources - 1) <= NAIVE_BUDGET
        )
        prefix = f"K={keys:,} N={sources}: "
        report = run_bench(
            settings,
            BenchOptions(keys, sources, modes),
            # Called only while this point runs, so the loop variable cannot move on under it.
            on_step=lambda step: on_step(prefix + step),  # noqa: B023
        )
        reports.append(report)
    return reports


def scale_chart(reports: list[dict[str, Any]], path: Path) -> None:
    """Requests per key and wall time against K (N = 4) and against N (K = 14,000)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    series = [
        ("keys", [r for r in reports if r["sources"] == 4], "K (N = 4)"),
        ("sources", [r for r in reports if r["keys"] == 14_000], "N (K = 14,000)"),
    ]
    for column, (axis, points, label) in enumerate(series):
        points = sorted(points, key=lambda r: r[axis])
        for mode in MODES:
            runs = [(r[axis], m) for r in points if (m := _mode(r, mode)) is not None]
            xs = [x for x, _ in runs]
            per_key = [m["requests_per_key"] for _, m in runs]
            wall = [m["wall_seconds"] for _, m in runs]
            axes[0][column].plot(xs, per_key, marker="o", label=mode)
            axes[1][column].plot(xs, wall, marker="o", label=mode)
        floors = [r["floor_seconds"] for r in points]
        axes[1][column].plot([r[axis] for r in points], floors, "k--", label="floor")
        axes[0][column].set_title(f"ES requests per key vs {label}")
        axes[1][column].set_title(f"wall time (s) vs {label}")
        axes[0][column].set_yscale("log")  # every mode sends > 0 requests per key
        if axis == "keys":
            axes[0][column].set_xscale("log")
            axes[1][column].set_xscale("log")
        for row in (0, 1):
            axes[row][column].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _mode(report: dict[str, Any], mode: str) -> dict[str, Any] | None:
    return next((m for m in report["modes"] if m["mode"] == mode), None)
