"""The fan-out benchmark's steps in a running pipeline: renames, waves of new items, and
what Elasticsearch shows of them (:mod:`fusion.bench.runs.fanout`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch

from fusion.bench import enriched_of, last_enriched, lower_median, until
from fusion.core import PipelineConfig

Send = Callable[[Sequence[tuple[str, str, bytes]]], int]


@dataclass(frozen=True)
class Renamed:
    """The row whose renames are fanned out: brand A, or (``chain``) company X, which the
    brands ``A000``... that the items name all name (docs/dimensions.md, chains)."""

    chain: bool = False

    @property
    def row(self) -> tuple[str, str]:
        """The renamed row's source and key."""
        return ("company", "X") if self.chain else ("brand", "A")

    def record(self, config: PipelineConfig, name: str) -> tuple[str, str, bytes]:
        source, key = self.row
        row = {"id": key, "name": name} | ({} if self.chain else {"country": "NO"})
        return (config.topic_of(config.source(source)), key, json.dumps(row).encode())

    @property
    def field(self) -> str:
        """The enriched item's field of the renamed row's name."""
        return "brand.company.name.keyword" if self.chain else "brand.name.keyword"


@dataclass(frozen=True)
class Warm:
    """The rename in a JVM that has run a while: untimed renames for ``seconds`` first (at
    least two), then ``renames`` timed ones."""

    seconds: float = 30.0
    renames: int = 3


def items_of(
    config: PipelineConfig, prefix: str, items: int, brand_id: str, brands: int = 0
) -> list[tuple[str, str, bytes]]:
    """``items`` items of ``brand_id`` (with ``brands``, spread over ``<brand_id>000``...)
    and their stock, keyed ``<prefix>-0000000`` on."""
    topic = {s.name: config.topic_of(s) for s in config.sources}
    records = []
    for i in range(items):
        key = f"{prefix}-{i:07d}"
        named = f"{brand_id}{i % brands:03d}" if brands else brand_id
        item = {"id": key, "brand": named, "title": f"item {i}", "price": i % 997}
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
    warming_up: tuple[Warm, Renamed],
    check: Callable[[], None],
) -> dict[str, Any]:
    """The rename once the JVM has warmed up: what a pipeline that has run a while does.

    A young JVM still compiles much of Spark's per-batch code (its JIT threads took
    more CPU than its executors in the first renames, docs/benchmark.md). ``sizes``:
    the items of brand A, and the new items of a wave.
    """
    items, ordinary = sizes
    warm, renamed = warming_up
    started, warming = time.monotonic(), 0
    while warming < 2 or time.monotonic() - started < warm.seconds:
        rename_alone(es, send, (config, renamed), items, f"Warmup {warming}", check)
        warming += 1
    seconds_warming = time.monotonic() - started
    alone = wave(es, send, config, "P", ordinary, check)
    during = wave(es, send, config, "Q", ordinary, check, also=(renamed.record(config, "Quartz"),))
    until(lambda: with_name(es, (config, renamed), "Quartz") >= items, check)
    renamed_during = last_enriched(es, config, "I") - renamed_at(es, (config, renamed))
    timed = [
        rename_alone(es, send, (config, renamed), items, f"Timed {n}", check)
        for n in range(warm.renames)
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
    renaming: tuple[PipelineConfig, Renamed],
    items: int,
    name: str,
    check: Callable[[], None],
) -> float:
    """Seconds from the row's rename to ``name`` in Kafka, with nothing else sent, to its last
    item's enriched document."""
    config, renamed = renaming
    send([renamed.record(config, name)])
    until(lambda: with_name(es, renaming, name) >= items, check)
    return last_enriched(es, config, "I") - renamed_at(es, renaming)


def renamed_at(es: Elasticsearch, renaming: tuple[PipelineConfig, Renamed]) -> float:
    """When the renamed row's last record reached Kafka (epoch s): its Kafka timestamp, as
    the row's source document keeps it (``fusion.ts``). A fan-out's time starts there, as a
    database's change starts when its connector writes it, whatever the benchmark did
    before (building a wave's payloads, for one)."""
    config, renamed = renaming
    source, key = renamed.row
    index = config.index_of(config.source(source))
    found = es.get(index=index, id=key, source_includes=["fusion.ts"])
    return float(found["_source"]["fusion"]["ts"]) / 1000


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


def with_name(es: Elasticsearch, renaming: tuple[PipelineConfig, Renamed], name: str) -> int:
    """How many enriched items hold the renamed row under ``name``."""
    config, renamed = renaming
    query = {"term": {renamed.field: name}}
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index, query=query)
    return int(found.get("count", 0))
