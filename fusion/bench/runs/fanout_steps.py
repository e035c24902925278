"""The fan-out benchmark's steps in a running pipeline: renames, waves of new items, and
what Elasticsearch shows of them (:mod:`fusion.bench.runs.fanout`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch

from fusion.bench import lower_median, until
from fusion.bench.runs.enriched_index import enriched_of, last_enriched
from fusion.core import PipelineConfig

Send = Callable[[Sequence[tuple[str, str, bytes]]], int]


@dataclass(frozen=True)
class Warm:
    """The rename in a JVM that has run a while: untimed renames for ``seconds`` first (at
    least two), then ``renames`` timed ones."""

    seconds: float = 30.0
    renames: int = 3


def items_of(
    config: PipelineConfig, prefix: str, items: int, brand_id: str
) -> list[tuple[str, str, bytes]]:
    """``items`` items of ``brand_id`` and their stock, keyed ``<prefix>-0000000`` on."""
    topic = {s.name: config.topic_of(s) for s in config.sources}
    records = []
    for i in range(items):
        key = f"{prefix}-{i:07d}"
        item = {"id": key, "brand": brand_id, "title": f"item {i}", "price": i % 997}
        records.append((topic["item"], key, json.dumps(item).encode()))
        records.append((topic["stock"], key, json.dumps({"item": key, "count": i % 50}).encode()))
    return records


def brand(brand_id: str, name: str) -> bytes:
    return json.dumps({"id": brand_id, "name": name, "country": "NO"}).encode()


def warmed(
    es: Elasticsearch,
    send: Send,
    config: PipelineConfig,
    sizes: tuple[int, int],
    warm: Warm,
    check: Callable[[], None],
) -> dict[str, Any]:
    """The rename once the JVM has warmed up: what a pipeline that has run a while does.

    A young JVM still compiles much of Spark's per-batch code (its JIT threads took
    more CPU than its executors in the first renames, docs/benchmark.md). ``sizes``:
    the items of brand A, and the new items of a wave.
    """
    items, ordinary = sizes
    started, warming = time.monotonic(), 0
    while warming < 2 or time.monotonic() - started < warm.seconds:
        rename_alone(es, send, config, items, f"Warmup {warming}", check)
        warming += 1
    seconds_warming = time.monotonic() - started
    alone = wave(es, send, config, "P", ordinary, check)
    quartz = (config.topic_of(config.source("brand")), "A", brand("A", "Quartz"))
    sent = time.time()
    during = wave(es, send, config, "Q", ordinary, check, also=(quartz,))
    until(lambda: with_brand(es, config, "Quartz") >= items, check)
    renamed_during = last_enriched(es, config, "I") - sent
    timed = [
        rename_alone(es, send, config, items, f"Timed {n}", check) for n in range(warm.renames)
    ]
    middle = lower_median(timed) or 0.0
    return {
        "renames_before": warming,
        "seconds_warming": round(seconds_warming, 1),
        "seconds": [round(t, 3) for t in timed],
        "items_per_second": round(items / middle, 1),
        "items_per_second_during": round(items / renamed_during, 1),
        "new_keys_fraction_during": round(alone / during, 3),
    }


def rename_alone(
    es: Elasticsearch,
    send: Send,
    config: PipelineConfig,
    items: int,
    name: str,
    check: Callable[[], None],
) -> float:
    """Seconds from brand A's rename to ``name``, with nothing else sent, to its last item's
    enriched document."""
    sent = time.time()
    send([(config.topic_of(config.source("brand")), "A", brand("A", name))])
    until(lambda: with_brand(es, config, name) >= items, check)
    return last_enriched(es, config, "I") - sent


def wave(
    es: Elasticsearch,
    send: Send,
    config: PipelineConfig,
    prefix: str,
    items: int,
    check: Callable[[], None],
    also: Sequence[tuple[str, str, bytes]] = (),
) -> float:
    """Seconds from sending ``items`` new items of brand B (and ``also`` first) to the last
    one's enriched document."""
    sent = time.time()
    send([*also, *items_of(config, prefix, items, "B")])
    until(lambda: enriched_of(es, config, prefix) >= items, check)
    return last_enriched(es, config, prefix) - sent


def with_brand(es: Elasticsearch, config: PipelineConfig, name: str) -> int:
    query = {"term": {"brand.name.keyword": name}}
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index, query=query)
    return int(found.get("count", 0))
