"""`fusion demo`: the healthcare pipeline of the original design, end to end, on the local runtime.

1. start Kafka and Elasticsearch (``fusion infra up``) and point the config at them;
2. start afresh: delete what an earlier demo left (topics, indexes, checkpoints),
   but never a pipeline the demo did not create, unless told ``--reset``;
3. generate 14,000 keys x 4 sources, shuffled, with duplicates and a few keys
   missing a source, and produce them;
4. run every query until each complete key is enriched;
5. print the summary, one enriched document and ``fusion status``.

The pipeline file ships inside the package, so the demo runs from any directory.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from fusion import pipeline
from fusion.bench import GenOptions, build_dataset, drained, produce
from fusion.cli.terminal import Tracker
from fusion.core import ConfigError, ExitCode, PipelineConfig
from fusion.elastic import client as es_client
from fusion.elastic import indexes as es_indexes
from fusion.infra import Endpoints
from fusion.kafka import topics as kafka_topics
from fusion.observe import Figures, Metrics
from fusion.ops import status, teardown
from fusion.spark import spark_session
from fusion.topology import topology_of

IDLE_LIMIT = 120.0  # seconds without any input before the demo gives up waiting
# The enriched index's mapping says who created it: the demo restarts only its own pipeline.
OWNER = {"created_by": "fusion demo"}


def example_config() -> Path:
    """The healthcare pipeline file shipped with Fusion."""
    return Path(str(resources.files("fusion") / "examples" / "healthcare.toml"))


@dataclass(frozen=True)
class DemoOptions:
    config: Path | None = None  # default: the shipped healthcare pipeline
    keys: int = 14_000
    reset: bool = False  # delete the pipeline's topics, indexes, checkpoints, whoever made them


def run_demo(options: DemoOptions, endpoints: Endpoints, out: Console, err: Console) -> int:
    env = dict(os.environ) | {
        "FUSION_KAFKA_BOOTSTRAP": endpoints.kafka_bootstrap,
        "FUSION_ES_URL": endpoints.es_url,
    }
    config = PipelineConfig.load(options.config or example_config(), env=env)
    out.print(f"Kafka {endpoints.kafka_version} at {endpoints.kafka_bootstrap}, "
              f"Elasticsearch {endpoints.es_version} at {endpoints.es_url}")  # fmt: skip
    with err.status("removing topics, indexes and checkpoints of an earlier demo"):
        start_afresh(config, options.reset)
    dataset = build_dataset(config, GenOptions(keys=options.keys, seed=7, missing_rate=0.01))
    started = time.monotonic()
    total = len(dataset.records)
    with Tracker(err, f"producing to {len(config.sources)} topics", "records", total) as tracker:
        produce(config, dataset.records, tracker.update)
    out.print(
        f"produced {total:,} records for {options.keys:,} keys: "
        f"{len(dataset.expected):,} complete, {len(dataset.missing):,} missing one source"
    )
    metrics, want, begun = Metrics(), len(dataset.expected), time.time()
    with Live(console=err, refresh_per_second=2, transient=err.is_terminal) as live:
        hooks = pipeline.Hooks(
            done=lambda m: Figures(m.counts()).enriched >= want,
            tick=lambda m: live.update(pipeline.status_line(m)),
            say=lambda line: live.console.print(escape(line), highlight=False),
        )
        pipeline.execute(config, topology_of(config).select(), metrics, IDLE_LIMIT, hooks)
    if not err.is_terminal:
        err.file.write("\n")  # the status line's last frame ends without one
    wall = time.monotonic() - started
    return _report(config, metrics, want, len(dataset.missing), (wall, begun), out)


def start_afresh(config: PipelineConfig, reset: bool) -> None:
    """Delete an earlier demo's topics, indexes and checkpoints; refuse anyone else's.

    The enriched index is created and marked as the demo's before any topic,
    so a pipeline with topics but no marked index is not the demo's.
    """
    es = es_client.connect(config.elasticsearch)
    found = teardown.existing(config)
    if found and not reset and not _made_by_demo(es, config):
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ConfigError(
            "fusion demo",
            "",
            f"pipeline {config.name!r} already exists ({shown}) and the demo did not create "
            "it; run `fusion demo --reset` to delete it and start over",
        )
    teardown.delete_all(config)
    es_indexes.ensure_indexes(es, config)
    es.indices.put_mapping(index=config.enriched_index, meta=es_indexes.index_meta(config) | OWNER)
    kafka_topics.ensure_topics(config)


def _made_by_demo(es: Elasticsearch, config: PipelineConfig) -> bool:
    mapping = es.options(ignore_status=404).indices.get_mapping(index=config.enriched_index)
    meta = mapping.get(config.enriched_index, {}).get("mappings", {}).get("_meta", {})
    return all(meta.get(name) == value for name, value in OWNER.items())


def _report(
    config: PipelineConfig,
    metrics: Metrics,
    want: int,
    incomplete: int,
    times: tuple[float, float],  # the demo's wall time; when its pipeline started (epoch s)
    out: Console,
) -> int:
    result = pipeline.summary(metrics)
    enriched = result["enriched"]
    out.print(f"\n[bold]keys enriched[/]            {enriched:,} of {want:,} complete keys")
    waiting = result["pending_keys"] + result["incomplete"]
    out.print(f"[bold]incomplete keys waiting[/]  {waiting:,} (generated {incomplete:,})")
    requests = f"{result['es_requests']:,} requests, lookup mode {config.pipeline.lookup}"
    out.print(f"[bold]ES lookups per key[/]       {result['es_requests_per_key']} ({requests})")
    out.print(f"[bold]dead letters[/]             {result['dead_letters']:,}")
    out.print(f"[bold]wall time[/]                {times[0]:.1f} s")
    es = es_client.connect(config.elasticsearch)
    first = Figures(metrics.counts()).first_batch_at(*topology_of(config).default) or times[1]
    out.print(f"[bold]the pipeline's backlog[/]   {drained(es, config, first)}")
    sample = es.search(index=config.enriched_index, size=1, sort=[{config.key_field: "asc"}])
    if hits := sample["hits"]["hits"]:
        _print_document(config, hits[0]["_source"], out)
    report = status.build(config, status.gather(spark_session(config), config))
    out.print("\n[bold]fusion status[/]")
    out.print(escape(status.render(report)), soft_wrap=True)
    more = f"{config.elasticsearch.shown_url}/{config.enriched_index}/_search?pretty"
    out.print(f"\nmore: curl -s '{more}'", soft_wrap=True)
    return ExitCode.OK if enriched >= want else ExitCode.QUERY_FAILED


def _print_document(config: PipelineConfig, doc: dict[str, Any], out: Console) -> None:
    """One line per part: the sources' fields (their copy of the key left out) and Fusion's."""
    out.print(f"\none enriched document, {config.key_field} = {doc.get(config.key_field)}:")
    for part, value in doc.items():
        if isinstance(value, dict):
            fields = {k: v for k, v in value.items() if k != config.key_field}
            out.print(f"  {part:<10} {escape(json.dumps(fields))}", soft_wrap=True)
