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
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from elasticsearch import Elasticsearch, helpers

from fusion import clients, pipeline, topology
from fusion.config import PipelineConfig
from fusion.enricher import FoundDoc, build_enriched
from fusion.events import now_iso
from fusion.generator import Dataset, GenOptions, build_dataset
from fusion.metrics import Metrics, percentiles
from fusion.publisher import Publisher
from fusion.settings import Settings

Mode = Literal["naive", "counted", "batched"]
MODES: tuple[Mode, ...] = ("naive", "counted", "batched")
SOURCE_NAMES = [
    "billing", "insurance", "medicine", "treatment", "lab", "pharmacy", "radiology", "admission",
]  # fmt: skip
_PIPELINE = {
    "naive": {"mode": "naive"},
    "counted": {"mode": "counted", "lookup": "per-source"},
    "batched": {"mode": "counted", "lookup": "batched"},
}


@dataclass(frozen=True)
class BenchOptions:
    keys: int
    sources: int
    modes: tuple[Mode, ...] = MODES
    seed: int = 42
    runs: int = 1


@dataclass
class ModeResult:
    mode: str
    keys: int
    sources: int
    es_requests: int
    requests_per_key: float
    wasted_requests: int
    docs_fetched: int
    wall_seconds: float
    keys_per_second: float
    latency_p50: float | None
    latency_p95: float | None
    latency_p99: float | None
    ratio_to_floor: float | None = None
    counters: dict[str, int] = field(default_factory=dict)


def bench_config(settings: Settings, mode: Mode, sources: int, tag: str) -> PipelineConfig:
    """A pipeline of ``sources`` sources, named for one mode of one run, on fresh topics."""
    names = SOURCE_NAMES[:sources] if sources <= len(SOURCE_NAMES) else [
        f"s{i}" for i in range(1, sources + 1)
    ]  # fmt: skip
    name = f"bench-{mode}-{tag}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {"name": name, "key_field": "txn_id", **_PIPELINE[mode]}
    data["sources"] = [{"name": n, "topic": f"{name}.{n}"} for n in names]
    return PipelineConfig.model_validate(data)


def run_mode(spark: Any, config: PipelineConfig, dataset: Dataset, mode: Mode) -> ModeResult:
    """Run one mode over ``dataset`` on fresh topics and indexes; measure it."""
    topology.delete_all(config)
    pipeline.prepare(config)
    metrics = Metrics()
    queries = pipeline.start(spark, config, pipeline.select(config, None), metrics)
    keys = len(dataset.expected)
    try:
        _wait_started(queries)
        first_send, last_send = _produce_timed(config, dataset)
        pipeline.run_until(queries, 120.0, done=lambda: metrics.get("enricher.enriched") >= keys)
    finally:
        for query in queries:
            query.stop()
    enriched_at = _enriched_times(clients.elasticsearch(config.elasticsearch), config)
    if len(enriched_at) < keys:
        raise RuntimeError(f"{mode}: only {len(enriched_at)} of {keys} keys were enriched")
    wall = max(enriched_at.values()) - first_send
    latencies = sorted(enriched_at[k] - last_send[k] for k in dataset.expected)
    spread = percentiles(latencies)
    requests = metrics.get("enricher.es_requests")
    topology.delete_all(config)
    return ModeResult(
        mode=mode,
        keys=keys,
        sources=len(config.sources),
        es_requests=requests,
        requests_per_key=round(requests / keys, 4),
        wasted_requests=metrics.get("naive.wasted"),
        docs_fetched=metrics.get("enricher.docs_fetched"),
        wall_seconds=round(wall, 3),
        keys_per_second=round(keys / wall, 1),
        latency_p50=_round(spread["p50"]),
        latency_p95=_round(spread["p95"]),
        latency_p99=_round(spread["p99"]),
        counters=metrics.snapshot()["counters"],
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _wait_started(queries: list[Any], timeout: float = 120.0) -> None:
    """Wait until every query finished its first (empty) trigger, so start-up is not measured."""
    deadline = time.monotonic() + timeout
    while any(q.lastProgress is None for q in queries):
        for query in queries:
            if not query.isActive:
                raise RuntimeError(f"query {query.name} stopped: {query.exception()}")
        if time.monotonic() > deadline:
            raise RuntimeError("queries did not start within 120 s")
        time.sleep(0.1)


def _produce_timed(config: PipelineConfig, dataset: Dataset) -> tuple[float, dict[str, float]]:
    publisher = Publisher(config.kafka, {"linger.ms": 20, "batch.num.messages": 10_000})
    last_send: dict[str, float] = {}
    first = time.time()
    for topic, key, value in dataset.records:
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
    helpers.bulk(es, actions, chunk_size=config.pipeline.bulk_chunk, refresh="wait_for")
    elapsed = time.monotonic() - started
    es.options(ignore_status=404).indices.delete(index=f"{prefix}-*")
    return elapsed


def run_bench(
    settings: Settings,
    spark: Any,
    options: BenchOptions,
    on_step: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every mode ``options.runs`` times, plus the floor; the best run of each is reported."""
    tag = uuid.uuid4().hex[:6]
    base = bench_config(settings, "batched", options.sources, tag)
    gen = GenOptions(keys=options.keys, seed=options.seed, duplicate_rate=0, missing_rate=0)
    dataset = build_dataset(base, gen)
    floors = []
    results: dict[str, ModeResult] = {}
    for run in range(options.runs):
        on_step(f"run {run + 1}/{options.runs}: floor (bulk from Python)")
        floors.append(run_floor(settings, dataset, base))
        for mode in options.modes:
            on_step(f"run {run + 1}/{options.runs}: {mode} mode, {options.keys:,} keys")
            config = bench_config(settings, mode, options.sources, f"{tag}{run}")
            # Same seed, same records; only the topic names differ per mode.
            result = run_mode(spark, config, build_dataset(config, gen), mode)
            if mode not in results or result.wall_seconds < results[mode].wall_seconds:
                results[mode] = result
    floor = min(floors)
    for result in results.values():
        result.ratio_to_floor = round(result.wall_seconds / floor, 2)
    return {
        "keys": options.keys,
        "sources": options.sources,
        "seed": options.seed,
        "runs": options.runs,
        "floor_seconds": round(floor, 3),
        "machine": _machine(),
        "modes": [asdict(results[m]) for m in options.modes],
    }


def _machine() -> dict[str, Any]:
    import os
    import platform

    import pyspark

    from fusion.infra.artifacts import ELASTICSEARCH_VERSION, KAFKA_VERSION

    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "kafka": KAFKA_VERSION,
        "elasticsearch": ELASTICSEARCH_VERSION,
    }


def markdown(report: dict[str, Any]) -> str:
    n, k = report["sources"], report["keys"]
    lines = [
        f"{k:,} keys x {n} sources, floor {report['floor_seconds']:.2f} s "
        f"(N·K + K documents bulk-indexed from Python), {report['machine']['cores']} cores",
        "",
        "| mode | ES requests | per key | wasted | docs fetched | wall s | x floor "
        "| keys/s | p50 s | p95 s | p99 s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in report["modes"]:
        lines.append(
            f"| {m['mode']} | {m['es_requests']:,} | {m['requests_per_key']} "
            f"| {m['wasted_requests']:,} | {m['docs_fetched']:,} | {m['wall_seconds']:.1f} "
            f"| {m['ratio_to_floor']} | {m['keys_per_second']:,} | {m['latency_p50']} "
            f"| {m['latency_p95']} | {m['latency_p99']} |"
        )
    return "\n".join(lines) + "\n"


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
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = out_dir / f"{stamp}-k{report['keys']}-n{report['sources']}"
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path, png_path = (base.with_suffix(s) for s in (".json", ".md", ".png"))
    json_path.write_text(json.dumps(report, indent=2))
    md_path.write_text(markdown(report))
    chart(report, png_path)
    return json_path, md_path, png_path
