"""The Prometheus rendering of the driver's counts (pure: plain data, no server)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from fusion.core.config import PipelineConfig
from fusion.observe.metrics import Metrics
from fusion.ops.prometheus import MetricsServer, PipelineCollector, families
from tests.promtool import promtool

ROOT = Path(__file__).resolve().parents[3]
CONFIG = PipelineConfig.load(ROOT / "examples" / "healthcare.toml", env={})
QUERIES = [f"indexer-{s}" for s in CONFIG.source_names] + ["counter", "enricher"]


def _metrics() -> Metrics:
    metrics = Metrics()
    metrics.add_all(
        {
            "indexer.billing.records": 12,
            "indexer.billing.indexed": 10,
            "indexer.billing.acks": 10,
            "indexer.billing.dlq": 2,
            "indexer.billing.bulk_requests": 3,
            "input.indexer-billing": 12,
            "busy_ms.counter": 2500,
            "batches.counter": 5,
            "phase_ms.counter.addBatch": 2000,
            "phase_ms.counter.queryPlanning": 300,
            "ms.index.write": 1500,
            "ms.enrich.lookup": 250,
            "counter.keys": 9,
            "counter.fired": 6,
            "counter.incomplete": 1,
            "counter.updated": 4,
            "counter.dlq": 1,
            "state.counter.rows": 9,
            "enricher.ready": 11,
            "enricher.enriched": 11,
            "enricher.updated": 4,
            "enricher.partial": 1,
            "enricher.es_requests": 2,
            "enricher.bulk_requests": 2,
            "running.counter": 1,
            "latency.over_objective": 1,
        }
    )
    for seconds in (0.2, 0.4, 1.2, 9.0):
        metrics.observe_latency(seconds)
    metrics.alert("elasticsearch", "Elasticsearch unavailable, retrying: ConnectionError")
    return metrics


def _scrape(
    metrics: Metrics, lag: dict[str, int]
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PipelineCollector(CONFIG, QUERIES, metrics, read_lag=lambda: lag))
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_each_count_lands_in_its_metric_with_its_labels() -> None:
    samples = _scrape(_metrics(), {"counter": 5, "enricher": 0})

    assert samples[("fusion_source_records_total", (("source", "billing"),))] == 12
    assert samples[("fusion_indexed_documents_total", (("source", "billing"),))] == 10
    assert samples[("fusion_acks_total", (("source", "billing"),))] == 10
    assert samples[("fusion_acks_total", (("source", "medicine"),))] == 0  # shown before any
    assert samples[("fusion_dead_letters_total", (("query", "indexer-billing"),))] == 2
    assert samples[("fusion_dead_letters_total", (("query", "counter"),))] == 1
    assert samples[("fusion_input_records_total", (("query", "indexer-billing"),))] == 12
    assert samples[("fusion_batch_seconds_total", (("query", "counter"),))] == 2.5
    # Where that time went: Spark's phases of the query's batches, the tasks' stages.
    assert samples[("fusion_batches_total", (("query", "counter"),))] == 5
    phase = "fusion_batch_phase_seconds_total"
    assert samples[(phase, (("phase", "addBatch"), ("query", "counter")))] == 2.0
    assert samples[(phase, (("phase", "queryPlanning"), ("query", "counter")))] == 0.3
    assert samples[("fusion_stage_seconds_total", (("stage", "index.write"),))] == 1.5
    assert samples[("fusion_stage_seconds_total", (("stage", "enrich.lookup"),))] == 0.25
    assert samples[("fusion_stage_seconds_total", (("stage", "index.parse"),))] == 0
    assert samples[("fusion_keys_fired_total", ())] == 6
    assert samples[("fusion_keys_incomplete_total", ())] == 1
    assert samples[("fusion_keys_updated_total", ())] == 4
    assert samples[("fusion_keys_pending", ())] == 2  # 9 seen - 6 fired - 1 expired
    assert samples[("fusion_state_keys", ())] == 9
    enriched = "fusion_enriched_documents_total"
    assert samples[(enriched, (("kind", "complete"),))] == 6
    assert samples[(enriched, (("kind", "update"),))] == 4
    assert samples[(enriched, (("kind", "partial"),))] == 1
    requests = "fusion_es_requests_total"
    assert samples[(requests, (("kind", "mget"), ("stage", "enricher")))] == 2
    assert samples[(requests, (("kind", "bulk"), ("stage", "enricher")))] == 2
    assert samples[(requests, (("kind", "bulk"), ("stage", "indexer-billing")))] == 3
    assert samples[("fusion_consumer_lag_records", (("query", "counter"),))] == 5
    assert samples[("fusion_server_up", (("server", "elasticsearch"),))] == 0
    assert samples[("fusion_server_up", (("server", "kafka"),))] == 1
    assert samples[("fusion_query_up", (("query", "counter"),))] == 1
    assert samples[("fusion_query_up", (("query", "enricher"),))] == 0  # not started


def test_latency_is_a_summary_of_the_sketchs_quantiles_in_seconds() -> None:
    """Latencies 0.2, 0.4, 1.2 and 9 s: each quantile is within 1 % of one of them."""
    samples = _scrape(_metrics(), {})
    name = "fusion_enrichment_latency_seconds"

    def quantile(q: str) -> float:
        return samples[(name, (("quantile", q),))]

    assert abs(quantile("0.5") - 0.4) <= 0.004  # the 2nd of 4 (nearest rank)
    assert abs(quantile("0.95") - 9.0) <= 0.09 and abs(quantile("0.99") - 9.0) <= 0.09
    assert samples[(f"{name}_count", ())] == 4
    assert abs(samples[(f"{name}_sum", ())] - 10.8) < 0.01
    # What the latency alert reads: keys over the objective, and the objective.
    assert samples[("fusion_enrichment_latency_over_objective_total", ())] == 1
    assert samples[("fusion_enrichment_latency_objective_seconds", ())] == 3.0


def test_names_follow_prometheus_conventions() -> None:
    for family in families(CONFIG, QUERIES, _metrics().counts(), {}, {}):
        assert re.fullmatch(r"fusion_[a-z_]+", family.name), family.name
        assert not family.name.endswith("_total")  # the client adds it to counters
        assert "_ms" not in family.name and "millis" not in family.name  # base units
        if family.type == "gauge":
            # A count, or a state that holds now (1) or not (0).
            assert family.name.endswith(
                ("_keys", "_pending", "_records", "_up", "_active", "_seconds")
            )
        assert family.documentation


def test_promtool_finds_nothing_to_fix_in_a_scrape() -> None:
    """Units in the names, ``_total`` on counters, base units: ``promtool check metrics``."""
    registry = MetricsServer(
        PipelineCollector(CONFIG, QUERIES, _metrics(), read_lag=lambda: {"counter": 5}),
        "127.0.0.1",
        0,
    ).registry
    text = generate_latest(registry).decode()
    assert "process_start_time_seconds" in text  # restarts show as its change
    done = promtool("check", "metrics", stdin=text)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), (
        done.stdout + done.stderr
    )


def test_lag_is_read_at_most_every_few_seconds_and_kept_through_a_kafka_outage() -> None:
    reads: list[int] = []

    def read_lag() -> dict[str, int]:
        reads.append(1)
        if len(reads) > 1:
            raise ConnectionError("Kafka down")
        return {"counter": 7}

    collector = PipelineCollector(CONFIG, QUERIES, Metrics(), read_lag)
    assert collector.lag() == {"counter": 7}
    assert collector.lag() == {"counter": 7} and len(reads) == 1
    collector._lag_at -= 60  # the reading is old now
    assert collector.lag() == {"counter": 7} and len(reads) == 2


def test_the_grafana_dashboard_only_queries_metrics_fusion_exports() -> None:
    dashboard = json.loads((ROOT / "examples" / "grafana-dashboard.json").read_text())
    exported = set()
    for family in families(CONFIG, QUERIES, _metrics().counts(), {}, {"counter": 0}):
        suffixes = {"counter": ["_total"], "summary": ["", "_sum", "_count"]}
        exported |= {family.name + s for s in suffixes.get(family.type, [""])}
    expressions = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    assert len(expressions) >= 8
    for expr in expressions:
        used = set(re.findall(r"\bfusion_[a-z_]+", expr))
        assert used and used <= exported, (expr, used - exported)
