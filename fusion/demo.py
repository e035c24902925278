"""`fusion demo`: the healthcare pipeline of the original design, end to end, on the local runtime.

1. start Kafka and Elasticsearch (``fusion infra up``) and point the config at them;
2. delete what an earlier demo left (topics, indexes, checkpoints);
3. generate 14,000 keys x 4 sources, shuffled, with duplicates and a few keys
   missing a source, and produce them;
4. run every query until each complete key is enriched;
5. print the summary, one enriched document and ``fusion status``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.markup import escape

from fusion import clients, pipeline, status, topology
from fusion.config import PipelineConfig
from fusion.generator import GenOptions, build_dataset, produce
from fusion.infra.runtime import Endpoints
from fusion.metrics import Metrics

DEFAULT_CONFIG = Path("examples/healthcare.toml")
IDLE_LIMIT = 120.0  # seconds without any input before the demo gives up waiting


def run_demo(
    config_path: Path | None, endpoints: Endpoints, keys: int, out: Console, err: Console
) -> int:
    env = dict(os.environ) | {
        "FUSION_KAFKA_BOOTSTRAP": endpoints.kafka_bootstrap,
        "FUSION_ES_URL": endpoints.es_url,
    }
    config = PipelineConfig.load(config_path or DEFAULT_CONFIG, env=env)
    out.print(f"Kafka {endpoints.kafka_version} at {endpoints.kafka_bootstrap}, "
              f"Elasticsearch {endpoints.es_version} at {endpoints.es_url}")  # fmt: skip
    with err.status("removing topics, indexes and checkpoints of an earlier demo"):
        topology.delete_all(config)
        topology.ensure_topics(config)
    dataset = build_dataset(config, GenOptions(keys=keys, seed=7, missing_rate=0.01))
    started = time.monotonic()
    with err.status(f"producing {len(dataset.records):,} records to {len(config.sources)} topics"):
        produce(config, dataset.records)
    out.print(
        f"produced {len(dataset.records):,} records for {keys:,} keys: "
        f"{len(dataset.expected):,} complete, {len(dataset.missing):,} missing one source"
    )
    metrics = Metrics()
    want = len(dataset.expected)
    with Live(console=err, refresh_per_second=2) as live:
        pipeline.execute(
            config,
            pipeline.select(config, None),
            metrics,
            stop_when_idle=IDLE_LIMIT,
            done=lambda m: m.get("enricher.enriched") >= want,
            tick=lambda m: live.update(pipeline.status_line(m)),
        )
    wall = time.monotonic() - started
    return _report(config, metrics, want, len(dataset.missing), wall, out)


def _report(
    config: PipelineConfig, metrics: Metrics, want: int, incomplete: int, wall: float, out: Console
) -> int:
    result = pipeline.summary(metrics)
    enriched = result["enriched"]
    out.print(f"\n[bold]keys enriched[/]            {enriched:,} of {want:,} complete keys")
    out.print(
        f"[bold]incomplete keys waiting[/]  {result['pending_keys'] + result['incomplete']:,} "
        f"(generated {incomplete:,})"
    )
    requests = f"{result['es_requests']:,} requests, lookup mode {config.pipeline.lookup}"
    out.print(f"[bold]ES lookups per key[/]       {result['es_requests_per_key']} ({requests})")
    out.print(f"[bold]dead letters[/]             {result['dead_letters']:,}")
    out.print(f"[bold]wall time[/]                {wall:.1f} s")
    es = clients.elasticsearch(config.elasticsearch)
    es.indices.refresh(index=config.enriched_index)
    sample = es.search(index=config.enriched_index, size=1, sort=[{config.key_field: "asc"}])
    hits = sample["hits"]["hits"]
    if hits:
        out.print("\none enriched document:")
        out.print_json(json.dumps(hits[0]["_source"]))
    spark = clients.spark_session(config)
    report = status.build(config, status.gather(spark, config))
    out.print("\n[bold]fusion status[/]")
    out.print(escape(status.render(report)), soft_wrap=True)
    out.print(
        f"\nmore: curl -s '{config.elasticsearch.url}/{config.enriched_index}/_search?pretty'"
        f"   (or fusion run --config {DEFAULT_CONFIG} to keep the pipeline running)"
    )
    return 0 if enriched >= want else 1
