"""Figures: the one reading of the counters' names (plain data, no server)."""

from __future__ import annotations

from fusion.observe import names
from fusion.observe.figures import Figures
from fusion.observe.metrics import Metrics

COUNTS = {
    "indexer.billing.records": 12,
    "indexer.billing.indexed": 10,
    "indexer.billing.acks": 10,
    "indexer.billing.dlq": 2,
    "indexer.billing.bulk_requests": 3,
    "indexer.lab.indexed": 7,
    "indexer.lab.acks": 7,
    "counter.keys": 9,
    "counter.fired": 6,
    "counter.incomplete": 1,
    "counter.dlq": 1,
    "enricher.enriched": 8,
    "enricher.updated": 2,
    "enricher.es_requests": 2,
    "enricher.bulk_requests": 2,
    "enricher.dlq": 3,
    "busy_ms.counter": 2500,
    "latency.q0_-34": 3,  # (0.495, 0.505] s
    "latency.q0_286": 1,  # (296, 302] s
    "latency.sum_ms": 4200,
}


def test_figures_read_each_stage_s_counts() -> None:
    figures = Figures(COUNTS)

    billing = figures.source("billing")
    assert (billing.records, billing.indexed, billing.acks) == (12, 10, 10)
    assert (billing.dead_letters, billing.bulk_requests) == (2, 3)
    assert figures.indexed == 17 and figures.acks == 17
    assert figures.dead_letters == 6  # indexer 2 + counter 1 + enricher 3
    assert figures.query_dead_letters("indexer-billing") == 2
    assert figures.query_dead_letters("enricher") == 3
    assert figures.pending_keys == 2  # 9 seen - 6 fired - 1 expired
    assert figures.bulk_requests == 5
    assert figures.lookups_per_key == 0.25
    assert figures.batch_seconds("counter") == 2.5
    assert figures.latency()["count"] == 4 and figures.latency_sum_seconds == 4.2


def test_the_headline_and_the_status_line_say_the_same() -> None:
    figures = Figures(COUNTS)

    headline = figures.headline()
    line = figures.status_line({"kafka": "Kafka unavailable, retrying"})

    assert headline["enriched"] == 8 and headline["pending_keys"] == 2
    assert headline["es_requests_per_key"] == 0.25 and headline["dead_letters"] == 6
    assert line.startswith("[Kafka unavailable, retrying]  indexed 17  acks 17  pending keys 2")
    assert "incomplete 1" in line and "updated" not in line  # only lifecycle events that happened
    assert (
        "enriched 8  dlq 6  ES lookups 2  last record→enriched p50 0.50 s p99 301.91 s (±1 %)"
        in line
    )


def test_the_status_line_shows_latency_quantiles_once_there_are_latencies() -> None:
    metrics = Metrics()
    for seconds in (0.12, 0.14, 0.18, 2.2):
        metrics.observe_latency(seconds)

    line = Figures(metrics.counts()).status_line({})

    # Nearest rank, each within 1 % of a latency a key had: the 2nd of 4 (0.14 s), the 4th.
    assert line.endswith("last record→enriched p50 0.14 s p99 2.20 s (±1 %)"), line
    assert "last record→enriched" not in Figures({"counter.fired": 3}).status_line({})


def test_an_empty_run_reads_as_zeros() -> None:
    figures = Figures({})

    assert figures.headline()["es_requests_per_key"] is None
    assert figures.source("billing").indexed == 0 and figures.driver_peak_mb("jvm") is None


def test_a_key_reported_incomplete_then_fired_late_is_not_subtracted_twice() -> None:
    # K1 fired; K2 incomplete and later fired by a late source; K3 still pending.
    counts = {"counter.keys": 3, "counter.fired": 2, "counter.incomplete": 1}

    assert Figures(counts | {"counter.fired_late": 1}).pending_keys == 1


def test_the_counters_state_is_read_from_whichever_query_keeps_it() -> None:
    from fusion.observe import names

    # The single query keeps the counter's state in the default layout; stages, the counter.
    assert Figures({names.state_rows("single"): 12}).state_keys == 12
    assert Figures({names.state_rows("counter"): 7}).state_keys == 7


def test_fan_outs_pending_are_those_asked_or_continued_and_not_read() -> None:
    figures = Figures(
        {names.FANOUT_ASKED: 3, names.FANOUT_CONTINUED: 4, names.FANOUT_REQUESTS: 5,
         names.FANOUT_KEYS: 20_000}
    )  # fmt: skip
    assert figures.fanouts_pending == 2 and figures.fanout_keys == 20_000
    assert "fan-outs pending 2  keys told 20,000" in figures.status_line({})
    assert "fan-outs" not in Figures({}).status_line({})
