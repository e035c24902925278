"""The children benchmark's steps in a running pipeline, and what Elasticsearch shows of them."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from elasticsearch import Elasticsearch, helpers

from fusion.bench import bench_publisher, until
from fusion.bench.children.records import BIG, Record, line_row, order_key, orders_of
from fusion.core import PipelineConfig
from fusion.kafka import Publisher, lag, stage_markers
from fusion.observe import Figures, percentiles
from fusion.topology import reads, topology_of


def per(count: int, of: int) -> float | None:
    return round(count / of, 4) if of else None


def big_order(
    es: Elasticsearch,
    config: PipelineConfig,
    send: Callable[[Sequence[Record]], int],
    lines: int,
    check: Callable[[], None],
) -> dict[str, Any]:
    """An order of ``lines`` lines (unmeasured), then every line changed at once: seconds to
    the enriched document holding every change, and the re-enrichments it took."""
    topic = config.topic_of(config.source("lines"))
    send(orders_of(config, BIG, 1, lines))
    key = order_key(BIG, 0)
    until(lambda: _lines_with_qty(es, config, key, 1) == lines, check)
    caught_up(config, check)
    before = _updated(config)
    changed = [line_row(key, j, 2) for j in range(lines)]
    first = time.time()
    send([(topic, row["line_id"], json.dumps(row).encode()) for row in changed])
    until(lambda: _lines_with_qty(es, config, key, 2) == lines, check)
    caught_up(config, check)
    doc = es.get(index=config.enriched_index, id=key)
    at = datetime.fromisoformat(doc["_source"]["fusion"]["enriched_at"]).timestamp()
    return {
        "lines": lines,
        "seconds": round(at - first, 3),
        "reenrichments": _updated(config) - before,
    }


def _updated(config: PipelineConfig) -> int:
    """The counter's updated events so far, from the markers its batches committed."""
    markers = stage_markers(config, topology_of(config).inputs())
    return sum(Figures(m.counts).updated for m, _ in markers.values() if m is not None)


def warm_up(
    config: PipelineConfig, rate: float, warm: tuple[float, int, int], check: Callable[[], None]
) -> None:
    """Changes to the lines of the warm-up wave's orders at ``rate`` a second, not measured.

    ``warm``: for how many seconds, and the warm-up orders and their lines each. A
    pipeline in production has compiled Spark's per-batch code; a JVM started a
    minute ago has not, and its JIT compilers take most of a core for minutes.
    """
    seconds, orders, lines = warm
    if seconds <= 0 or not orders or not lines:
        return
    topic = config.topic_of(config.source("lines"))
    rows = [_warm_change(n, orders, lines) for n in range(int(seconds * rate))]
    _send_at(bench_publisher(config), topic, rows, rate)
    caught_up(config, check)


def steady(
    es: Elasticsearch,
    config: PipelineConfig,
    plan: tuple[int, float],
    check: Callable[[], None],
) -> dict[str, Any]:
    """``count`` lines of as many burst orders, each changed once at ``rate`` a second: each
    change's latency to its order's enriched document holding it."""
    count, rate = plan
    topic = config.topic_of(config.source("lines"))
    rows = [line_row(order_key("B", n), 0, 99) for n in range(count)]
    first = time.time()
    sent = _send_at(bench_publisher(config), topic, rows, rate)
    until(lambda: _orders_with_qty(es, config, 99) >= count, check)
    caught_up(config, check)
    latencies = sorted(at - sent[key] for key, at in _enriched_times(es, config, sent).items())
    spread = percentiles(latencies)
    return {
        "lines": count,
        "rate": round(rate, 1),
        "seconds_sending": round(time.time() - first, 1),
        "latency_p50": _round(spread["p50"]),
        "latency_p99": _round(spread["p99"]),
        "latency_mean": _round(statistics.fmean(latencies) if latencies else None),
    }


def _warm_change(n: int, orders: int, lines: int) -> dict[str, Any]:
    """The ``n``-th warm-up change: a line of a warm-up order, each time another quantity."""
    return line_row(order_key("W", n % orders), (n // orders) % lines, 1_000 + n)


def _send_at(
    publisher: Publisher, topic: str, rows: Sequence[dict[str, Any]], rate: float
) -> dict[str, float]:
    """Send ``rows`` at ``rate`` a second; when each order's row was sent."""
    sent: dict[str, float] = {}
    first = time.time()
    for n, row in enumerate(rows):
        ahead = first + n / rate - time.time()
        if ahead > 0:
            time.sleep(ahead)
        publisher.send(topic, row["line_id"], json.dumps(row).encode())
        sent[row["order_id"]] = time.time()
    publisher.flush()
    return sent


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def caught_up(config: PipelineConfig, check: Callable[[], None]) -> None:
    until(lambda: lag.behind(config, reads(topology_of(config).select())) == 0, check)


def _lines_with_qty(es: Elasticsearch, config: PipelineConfig, key: str, qty: int) -> int:
    """How many of the order's lines in its enriched document have ``qty``."""
    found = es.options(ignore_status=(404,)).get(
        index=config.enriched_index, id=key, source_includes=["lines.qty"]
    )
    lines = found.get("_source", {}).get("lines", []) if found.get("found") else []
    return sum(1 for line in lines if line.get("qty") == qty)


def _orders_with_qty(es: Elasticsearch, config: PipelineConfig, qty: int) -> int:
    query = {"nested": {"path": "lines", "query": {"term": {"lines.qty": qty}}}}
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index, query=query)
    return int(found.get("count", 0))


def _enriched_times(
    es: Elasticsearch, config: PipelineConfig, keys: dict[str, float]
) -> dict[str, float]:
    es.indices.refresh(index=config.enriched_index)
    times = {}
    for hit in helpers.scan(
        es, index=config.enriched_index, _source=["fusion.enriched_at"], size=5000,
        query={"query": {"ids": {"values": list(keys)}}},
    ):  # fmt: skip
        times[hit["_id"]] = datetime.fromisoformat(
            hit["_source"]["fusion"]["enriched_at"]
        ).timestamp()
    return times
