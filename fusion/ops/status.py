"""`fusion status`: what each stage did, how far behind it is, and which keys wait for what.

Three inputs:

- every component's counts since its checkpoint was created: the marker its
  driver commits with each micro-batch (:mod:`fusion.spark.stage`), read from
  Kafka, so it does not matter which process (or machine) runs a component;
- consumer lag: the input offsets committed with that marker (the component's
  consumer group, ``fusion-<pipeline>-<query>``) against the topics' end offsets;
- the counter's state (:mod:`fusion.counter.state`): pending keys by missing
  source, counted by a Spark aggregate on the executors.

:func:`build` assembles them (pure); :func:`gather` reads them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fusion.core import PipelineConfig, iso_utc
from fusion.counter import StateSummary, summary
from fusion.elastic import client as es_client
from fusion.kafka import lag_of, oldest_pending, source_lag, stage_markers
from fusion.observe import ES_BACKPRESSURE_ALERT, Figures, sketch
from fusion.topology import ENRICHER, topology_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Inputs:
    metrics: Mapping[str, Any]  # shaped like a Metrics.snapshot()
    lag: Mapping[str, int | None]  # stage -> records behind, None if it never committed
    source_lag: Mapping[str, int | None]  # source -> records its indexer has still to read
    state: StateSummary  # empty when the counter's state was not read
    rejected_now: int = 0  # requests Elasticsearch rejected (429) while this look lasted
    oldest_fanout: datetime | None = None  # the change the oldest pending fan-out is for


def gather(
    spark: SparkSession | None, config: PipelineConfig, metrics: Mapping[str, Any] | None = None
) -> Inputs:
    """Read the inputs; ``metrics`` defaults to the components' markers in Kafka.

    Elasticsearch's rejection counters are read before and after the rest: a
    difference says it rejects requests (429) now.
    """
    es = es_client.connect(config.elasticsearch)
    before = es_client.rejected(es)
    inputs = topology_of(config).inputs()
    markers = stage_markers(config, inputs)
    if metrics is None:
        counts: Counter[str] = Counter()
        for marker, _ in markers.values():
            counts.update(marker.counts if marker is not None else {})
        metrics = {"counters": dict(counts), "latency_seconds": sketch.quantiles(counts)}
    state = summary(spark, config) if spark is not None else StateSummary()
    lags = lag_of(config, inputs, markers), source_lag(config, inputs, markers)
    oldest = oldest_pending(config, markers)
    rejected = max(0, es_client.rejected(es) - before)
    return Inputs(metrics, *lags, state, rejected, oldest)


def build(config: PipelineConfig, inputs: Inputs) -> dict[str, Any]:
    topology = topology_of(config)
    figures = Figures(inputs.metrics.get("counters", {}))
    latency = inputs.metrics.get("latency_seconds", {})
    return {
        "pipeline": config.name,
        "sources": {
            s: {
                "indexed": figures.source(s).indexed,
                "acks": figures.source(s).acks,
                "dlq": figures.source(s).dead_letters,
                "lost": figures.source(s).lost,
                "lost_by_partition": dict(figures.source(s).lost_by_partition),
                "lag": inputs.source_lag.get(s),
            }
            for s in config.source_names
        },
        "counter": {
            "keys_in_state": inputs.state.keys,
            "pending_keys": inputs.state.pending,
            "pending_by_missing_source": dict(inputs.state.pending_by_missing),
            "fired": figures.fired,
            "incomplete": figures.incomplete,
            "updated": figures.updated,
            "fanouts_pending": figures.fanouts_pending,
            "fanout_keys": figures.fanout_keys,
            "oldest_pending_fanout": _iso(inputs.oldest_fanout),
            "dlq": figures.counter_dead_letters,
            # In the single layout one query counts (and indexes, and enriches).
            "lag": inputs.lag.get(topology.counter_query),
        },
        "enricher": {
            "enriched": figures.enriched,
            "updated": figures.enriched_updates,
            "partial": figures.enriched_partial,
            "dlq": figures.enricher_dead_letters,
            "es_requests": figures.lookups,
            "es_requests_per_key": figures.lookups_per_key,
            "latency_p50_seconds": latency.get("p50"),
            "latency_p99_seconds": latency.get("p99"),
            "latency_relative_error": latency.get("relative_error"),
            # Enriched in the counter's task: the counter's input is the enricher's too.
            "lag": inputs.lag.get(ENRICHER if topology.enricher_apart else topology.counter_query),
        },
        "children": {
            # Per children source, the parents told of a change (one ack per parent).
            "changes": {name: figures.source(name).acks for name in config.children},
            "rows_fetched": figures.children_fetched,
            "arrays_truncated": figures.arrays_truncated,
        }
        if config.children
        else {},
        "elasticsearch": {"retries": figures.es_retries, "rejected_now": inputs.rejected_now},
        "alerts": dict(inputs.metrics.get("alerts", {})) | _rejecting(inputs.rejected_now),
    }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else iso_utc(at)


def _rejecting(rejected: int) -> dict[str, str]:
    if not rejected:
        return {}
    line = f"Elasticsearch rejecting requests now (429, a queue full): {rejected:,} while looking"
    return {ES_BACKPRESSURE_ALERT: line}


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
        if s.get("lost"):
            where = ", ".join(f"partition {p}: {n:,}" for p, n in s["lost_by_partition"].items())
            lines.append(f"  [alert] {name}: {s['lost']:,} records deleted before read ({where})")
    c = status["counter"]
    missing = ", ".join(f"{n} {k:,}" for n, k in c["pending_by_missing_source"].items()) or "-"
    lines.append(
        f"  counter   fired {c['fired']:,}  incomplete {c['incomplete']:,}  "
        f"updated {c['updated']:,}  dlq {c['dlq']:,}  lag {lag(c['lag'])}"
    )
    lines.append(f"            pending keys {c['pending_keys']:,}, missing: {missing}")
    if c.get("fanout_keys") or c.get("fanouts_pending"):
        lines.append(
            f"            fan-outs pending {c['fanouts_pending']:,}, "
            f"keys told of a dimension row's change {c['fanout_keys']:,}"
        )
    if c.get("oldest_pending_fanout"):
        lines.append(f"            oldest pending change {c['oldest_pending_fanout']}")
    if kids := status.get("children"):
        told = ", ".join(f"{name} {n:,}" for name, n in kids["changes"].items())
        lines.append(
            f"  children  changes told to their parents: {told}; rows in arrays "
            f"{kids['rows_fetched']:,}, arrays cut {kids['arrays_truncated']:,}"
        )
    e = status["enricher"]
    p50, p99 = e["latency_p50_seconds"], e["latency_p99_seconds"]
    latency = f"{p50:.2f} s / {p99:.2f} s" if p50 is not None and p99 is not None else "-"
    lines.append(
        f"  enricher  enriched {e['enriched']:,} (updated {e['updated']:,}, "
        f"partial {e['partial']:,})  dlq {e['dlq']:,}  lag {lag(e['lag'])}"
    )
    lines.append(
        f"            ES requests {e['es_requests']:,} ({e['es_requests_per_key']} per key)  "
        f"last record→enriched p50/p99 {latency}"
    )
    if latency != "-":
        error = (e.get("latency_relative_error") or 0.0) * 100
        note = f"quantiles from a sketch, within {error:.2g} % of a key's latency"
        lines.append(f"            ({note})")
    es = status["elasticsearch"]
    lines.append(f"  elasticsearch  requests retried {es['retries']:,} (429, 5xx, outages)")
    return "\n".join(lines)
