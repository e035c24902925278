"""`fusion status`: what each stage did, how far behind it is, and which keys wait for what.

Three inputs:

- the metrics ``fusion run`` writes to ``<checkpoint_dir>/metrics.json`` on every
  tick (counts since that run started: records indexed, acks, dead letters,
  fires, enrichments, Elasticsearch requests, latencies);
- consumer lag: each query's last committed offsets (its checkpoint's
  ``offsets/`` log) against the topics' end offsets in Kafka;
- the counter's state (:mod:`fusion.counter_state`): pending keys by missing source.

:func:`build` assembles them (pure); :func:`gather` reads them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition

from fusion import clients
from fusion.config import PipelineConfig
from fusion.counter import KeyState, Rules
from fusion.counter_state import all_states
from fusion.enricher_query import input_topics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Inputs:
    metrics: Mapping[str, Any]  # a Metrics.snapshot()
    lag: Mapping[str, int | None]  # stage -> records behind, None if it never ran
    states: list[KeyState]  # empty when the counter's state was not read


def gather(
    spark: SparkSession | None, config: PipelineConfig, metrics: Mapping[str, Any] | None = None
) -> Inputs:
    """Read the inputs; ``metrics`` defaults to the last ``metrics.json`` of ``fusion run``."""
    if metrics is None:
        path = config.checkpoint_dir / "metrics.json"
        metrics = json.loads(path.read_text()) if path.exists() else {}
    states = list(all_states(spark, config)) if spark is not None else []
    return Inputs(metrics, consumer_lag(config), states)


def stage_inputs(config: PipelineConfig) -> dict[str, list[str]]:
    """Each query's checkpoint name and the topics it reads."""
    stages = {f"indexer-{s.name}": [config.topic_of(s)] for s in config.sources}
    return stages | {"counter": [config.acks_topic], "enricher": input_topics(config)}


def consumer_lag(config: PipelineConfig, only: str | None = None) -> dict[str, int | None]:
    """Records (plus transaction markers) each query (or ``only`` that one) still has to read."""
    inputs = {s: t for s, t in stage_inputs(config).items() if only is None or s == only}
    committed = {stage: _committed_offsets(config.checkpoint_dir / stage) for stage in inputs}
    ends = _end_offsets(config, {t for topics in inputs.values() for t in topics})
    lag: dict[str, int | None] = {}
    for stage, topics in inputs.items():
        offsets = committed[stage]
        if offsets is None:
            lag[stage] = None
            continue
        lag[stage] = sum(
            max(0, end - offsets.get(topic, {}).get(partition, 0))
            for (topic, partition), end in ends.items()
            if topic in topics
        )
    return lag


def _committed_offsets(checkpoint: Path) -> dict[str, dict[int, int]] | None:
    """The end offsets of the query's last committed batch, from its offset and commit logs."""
    done = {p.name for p in (checkpoint / "commits").glob("*") if p.name.isdigit()}
    logs = [p for p in (checkpoint / "offsets").glob("*") if p.name in done]
    if not logs:
        return None
    latest = max(logs, key=lambda p: int(p.name))
    offsets: dict[str, dict[int, int]] = {}
    # Line 1 is the log version, line 2 the batch metadata, then one line per source.
    for line in latest.read_text().splitlines()[2:]:
        for topic, partitions in json.loads(line).items():
            offsets[topic] = {int(p): int(o) for p, o in partitions.items()}
    return offsets


def _end_offsets(config: PipelineConfig, topics: set[str]) -> dict[tuple[str, int], int]:
    consumer = clients.kafka_consumer(config.kafka, f"fusion-status-{config.name}")
    try:
        metadata = consumer.list_topics(timeout=10).topics
        ends = {}
        for topic in topics:
            for partition in metadata[topic].partitions if topic in metadata else []:
                tp = TopicPartition(topic, partition)
                ends[(topic, partition)] = consumer.get_watermark_offsets(tp, timeout=10)[1]
        return ends
    finally:
        consumer.close()


def build(config: PipelineConfig, inputs: Inputs) -> dict[str, Any]:
    counts: Mapping[str, int] = inputs.metrics.get("counters", {})
    latency = inputs.metrics.get("latency_seconds", {})
    rules = Rules.of(config)
    pending = [s for s in inputs.states if not s.fired and s.expired_at is None]
    by_missing = Counter(name for s in pending for name in s.missing(rules))
    enriched = counts.get("enricher.enriched", 0)
    requests = counts.get("enricher.es_requests", 0)
    return {
        "pipeline": config.name,
        "sources": {
            s: {
                "indexed": counts.get(f"indexer.{s}.indexed", 0),
                "acks": counts.get(f"indexer.{s}.acks", 0),
                "dlq": counts.get(f"indexer.{s}.dlq", 0),
                "lag": inputs.lag.get(f"indexer-{s}"),
            }
            for s in config.source_names
        },
        "counter": {
            "keys_in_state": len(inputs.states),
            "pending_keys": len(pending),
            "pending_by_missing_source": dict(sorted(by_missing.items())),
            "fired": counts.get("counter.fired", 0),
            "incomplete": counts.get("counter.incomplete", 0),
            "updated": counts.get("counter.updated", 0),
            "dlq": counts.get("counter.dlq", 0),
            "lag": inputs.lag.get("counter"),
        },
        "enricher": {
            "enriched": enriched,
            "updated": counts.get("enricher.updated", 0),
            "partial": counts.get("enricher.partial", 0),
            "dlq": counts.get("enricher.dlq", 0),
            "es_requests": requests,
            "es_requests_per_key": round(requests / enriched, 4) if enriched else None,
            "latency_p50_seconds": latency.get("p50"),
            "latency_p99_seconds": latency.get("p99"),
            "lag": inputs.lag.get("enricher"),
        },
        "alerts": inputs.metrics.get("alerts", {}),
    }


def render(status: Mapping[str, Any]) -> str:
    def lag(value: int | None) -> str:
        return "not started" if value is None else f"{value:,}"

    lines = [f"pipeline {status['pipeline']}"]
    lines += [f"  [alert] {message}" for message in status["alerts"].values()]
    lines.append(f"  {'source':<14} {'indexed':>10} {'acks':>10} {'dlq':>7} {'lag':>12}")
    for name, s in status["sources"].items():
        lines.append(
            f"  {name:<14} {s['indexed']:>10,} {s['acks']:>10,} {s['dlq']:>7,} {lag(s['lag']):>12}"
        )
    c = status["counter"]
    missing = ", ".join(f"{n} {k:,}" for n, k in c["pending_by_missing_source"].items()) or "-"
    lines.append(
        f"  counter   fired {c['fired']:,}  incomplete {c['incomplete']:,}  "
        f"updated {c['updated']:,}  dlq {c['dlq']:,}  lag {lag(c['lag'])}"
    )
    lines.append(f"            pending keys {c['pending_keys']:,}, missing: {missing}")
    e = status["enricher"]
    p50, p99 = e["latency_p50_seconds"], e["latency_p99_seconds"]
    latency = f"{p50:.2f} s / {p99:.2f} s" if p50 is not None and p99 is not None else "-"
    lines.append(
        f"  enricher  enriched {e['enriched']:,} (updated {e['updated']:,}, "
        f"partial {e['partial']:,})  dlq {e['dlq']:,}  lag {lag(e['lag'])}"
    )
    lines.append(
        f"            ES requests {e['es_requests']:,} ({e['es_requests_per_key']} per key)  "
        f"latency p50/p99 {latency}"
    )
    return "\n".join(lines)
