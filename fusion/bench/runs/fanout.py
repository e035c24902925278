"""`fusion bench fanout`: a brand renamed, and every item that names it enriched again.

A pipeline of items (naming a brand), their stock and the brands (a
dimension, docs/dimensions.md). Per size and run:

1. the floor: this machine bulk-writes the items' enriched documents from
   Python (no Kafka, no Spark), the same size as the pipeline's;
2. ``items`` items of brand A, their stock and brand A, enriched by one
   `fusion run` (not measured), which then stops;
3. a second `fusion run` on the same checkpoint; a small wave of new items
   of brand B warms it up (not measured); then a wave of ``ordinary`` new
   items of brand B alone (measured: new keys enriched per second without a
   fan-out); then brand A is renamed (one record) together with a second such
   wave. Measured: the time from that record in Kafka (its timestamp, as the
   brand's source document keeps it) to the last item's enriched document
   with the new name, the items re-enriched per second (and as a
   fraction of the floor), the Elasticsearch requests per item (the fan-out's
   searches and the enricher's lookups, from that run's counts), and the
   second wave's new keys per second as a fraction of the first's: what the
   fan-out leaves the rest of the pipeline (the issue asks at least half);
4. brand A renamed again with nothing else sent (the rename alone: its items
   per second, and which process took the cores meanwhile), then one more
   wave of new items alone. The faster of the two waves alone is the rate the
   wave during the fan-out is compared with: the first can meet work of the
   restart's own (in one session it ran at a quarter of the wave during the
   fan-out in all three runs);
5. the same JVM warmed up (:func:`fusion.bench.runs.fanout_steps.warmed`):
   untimed renames for at least 30 s, a wave alone and one beside a rename,
   then three renames alone timed. A JVM a minute old still compiles much of
   Spark's per-batch code; a pipeline that has run a while does not.

With ``chain`` (``--chain``), the renamed row is a company that 100 brands
name, each named by a hundredth of the items: the rename reaches the items
up the chain, through the brands (docs/dimensions.md, chains).

Each figure is the median of the runs, beside the floor of its own run.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from elasticsearch import helpers

from fusion import pipeline
from fusion.bench import (
    PipelineProcess,
    bench_publisher,
    cores_between,
    cpu_by_part,
    git_commit,
    last_enriched,
    machine,
    produce,
    server_pids,
    until,
)
from fusion.bench.runs.fanout_report import median_run
from fusion.bench.runs.fanout_steps import (
    Renamed,
    Warm,
    brand,
    items_of,
    rename_alone,
    renamed_at,
    warmed,
    wave,
    with_name,
)
from fusion.core import PipelineConfig, PipelineSection, Settings, now_iso
from fusion.elastic import client as es_client
from fusion.kafka import lag
from fusion.observe import Figures
from fusion.ops import teardown
from fusion.topology import reads, topology_of


@dataclass(frozen=True)
class FanoutOptions:
    items: tuple[int, ...] = (10_000, 100_000)
    runs: int = 3
    page: int = PipelineSection.model_fields["fanout_page"].default
    ordinary: int = 5_000  # new items per wave, with and without a fan-out
    warm: Warm = field(default_factory=Warm)
    # Company X's rename, through the CHAIN_BRANDS brands naming it (False: brand A's).
    chain: bool = False

    @property
    def renamed(self) -> Renamed:
        return Renamed(self.chain)


CHAIN_BRANDS = 100


def fanout_config(settings: Settings, tag: str, page: int, chain: bool = False) -> PipelineConfig:
    name = f"bench-fanout-{tag}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {"name": name, "key_field": "item_id", "fanout_page": page}
    brand_source: dict[str, Any] = {"name": "brand", "topic": f"{name}.brand", "key": "id"}
    data["sources"] = [
        {"name": "item", "topic": f"{name}.item", "key": "id", "references": {"brand": "brand"}},
        {"name": "stock", "topic": f"{name}.stock", "key": "item"},
        brand_source | {"dimension": True},
    ]
    if chain:
        brand_source["references"] = {"company": "company_id"}
        data["sources"][2] = brand_source | {"dimension": True}
        company = {"name": "company", "topic": f"{name}.company", "key": "id", "dimension": True}
        data["sources"].append(company)
    return PipelineConfig.model_validate(data)


def _records(config: PipelineConfig, items: int, chain: bool) -> list[tuple[str, str, bytes]]:
    topic = config.topic_of(config.source("brand"))
    if not chain:
        brands = [(topic, "A", brand("A", "ACME")), (topic, "B", brand("B", "Bolt"))]
        return brands + items_of(config, "I", items, "A")
    # Companies X (renamed) and Y, and brands naming them: items of A000... name X's.
    companies = [Renamed(chain=True).record(config, "ACME")]
    companies.append((config.topic_of(config.source("company")), "Y", b'{"id": "Y", "name": "Y"}'))
    named = [(f"A{n:03d}", "X") for n in range(CHAIN_BRANDS)] + [("B", "Y")]
    rows = [
        (topic, b, json.dumps({"id": b, "name": f"brand {b}", "company_id": c}).encode())
        for b, c in named
    ]
    return companies + rows + items_of(config, "I", items, "A", CHAIN_BRANDS)


def run_fanout(
    settings: Settings, options: FanoutOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="fusion-fanout-"))
    sizes: dict[str, Any] = {}
    for items in options.items:
        runs = []
        for run in range(options.runs):
            tag = f"{uuid.uuid4().hex[:6]}{run}"
            config = fanout_config(settings, tag, options.page, options.renamed.chain)
            on_step(f"{items:,} items, run {run + 1}/{options.runs}: floor")
            floor = enriched_floor(settings, config, items)
            on_step(f"{items:,} items, run {run + 1}/{options.runs}: enrich, then rename")
            result = rename(
                (config, options.renamed), (items, options.ordinary), options.warm, workdir
            )
            rate = result["items_per_second"]
            runs.append(result | {"floor_items_per_second": round(items / floor)}
                        | {"fraction_of_floor": round(rate / (items / floor), 3)})  # fmt: skip
        sizes[str(items)] = {"median": median_run(runs), "runs": runs}
    return {
        "kind": "fanout",
        "chain": options.renamed.chain,
        "page": options.page,
        "warm": {"seconds": options.warm.seconds, "renames": options.warm.renames},
        "runs": options.runs,
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "sizes": sizes,
    }


def rename(
    renaming: tuple[PipelineConfig, Renamed], sizes: tuple[int, int], warm: Warm, workdir: Path
) -> dict[str, Any]:
    """Enrich ``items`` items of brand A (or of the brands of company X), then rename the row
    in a second run; what the rename took, and how fast ``ordinary`` new keys were enriched
    with and without it (``sizes``); the same once the JVM has warmed up."""
    config, renamed = renaming
    items, ordinary = sizes
    teardown.delete_all(config)
    pipeline.prepare(config)
    es = es_client.connect(config.elasticsearch)
    produce(config, _records(config, items, renamed.chain))
    with PipelineProcess(config, workdir) as run:
        run.wait_started()
        until(lambda: with_name(es, renaming, "ACME") >= items, run.check)
        until(lambda: lag.behind(config, reads(topology_of(config).select())) == 0,
               run.check)  # fmt: skip
        run.stop()
    with PipelineProcess(config, workdir) as run:
        run.wait_started()
        # One producer for the rest, connected before anything is timed: a new one's
        # connection took 0.5-0.7 s on this machine, which no database's connector pays
        # per change. The warm-up also writes a brand no item names (no fan-out).
        send = partial(produce, config, publisher=bench_publisher(config))
        brands = config.topic_of(config.source("brand"))
        unnamed = (brands, "Z", brand("Z", "Zed"))
        wave(es, send, config, "W", max(1, ordinary // 5), run.check, (unnamed,))
        alone = wave(es, send, config, "N", ordinary, run.check)
        rename_a = renamed.record(config, "Rotunda")
        during = wave(es, send, config, "D", ordinary, run.check, also=(rename_a,))
        until(lambda: with_name(es, renaming, "Rotunda") >= items, run.check)
        last = last_enriched(es, config, "I")
        sent = renamed_at(es, renaming)
        until(lambda: lag.behind(config, reads(topology_of(config).select())) == 0,
               run.check)  # fmt: skip
        assert run.process is not None
        servers = server_pids(config)
        before = cpu_by_part(run.process.pid, servers)
        renamed_alone = rename_alone(es, send, renaming, items, "Zenith", run.check)
        spent = cpu_by_part(run.process.pid, servers)
        # New keys alone once more: the first wave can meet work of the restart's own;
        # the faster of the two is the one compared.
        again = wave(es, send, config, "M", ordinary, run.check)
        warmed_up = warmed(es, send, config, sizes, (warm, renamed), run.check)
        figures = Figures(run.stop()["counters"])
    teardown.delete_all(config)
    seconds = last - sent
    requests = figures.lookups + figures.fanout_searches
    return {
        "items": items,
        "seconds": round(seconds, 3),
        "items_per_second": round(items / seconds, 1),
        "seconds_alone": round(renamed_alone, 3),
        "items_per_second_alone": round(items / renamed_alone, 1),
        # Where the cores went while the rename alone ran: cores busy, by part.
        "cores_alone": cores_between(before, spent, renamed_alone),
        "keys_told": figures.fanout_keys,
        "es_requests": requests,
        # Both renames' items, and the waves' lookups too.
        "es_requests_per_item": round(requests / (2 * items), 4),
        "enricher_lookups": figures.lookups,
        "new_keys_per_second_alone": round(ordinary / min(alone, again), 1),
        "new_keys_per_second_alone_waves": [round(ordinary / alone, 1), round(ordinary / again, 1)],
        "new_keys_per_second_during": round(ordinary / during, 1),
        "new_keys_fraction_during": round(min(alone, again) / during, 3),
        "warm": warmed_up,
    }


def enriched_floor(settings: Settings, config: PipelineConfig, items: int) -> float:
    """Seconds to bulk-write ``items`` enriched item documents from Python (one refresh)."""
    es = es_client.connect(settings.elasticsearch)
    index = f"bench-floor-{uuid.uuid4().hex[:8]}"
    now = now_iso()
    # A chain's item holds its brand's company inside the brand.
    chained = "company" in config.source_names
    company = {"company": {"id": "X", "name": "Rotunda"}} if chained else {}
    docs = [
        {"_index": index, "_id": f"I-{i:07d}", "_source": {
            "item_id": f"I-{i:07d}",
            "item": {"id": f"I-{i:07d}", "brand": "A", "title": f"item {i}", "price": i % 997},
            "stock": {"item": f"I-{i:07d}", "count": i % 50},
            "brand": {"id": "A", "name": "Rotunda", "country": "NO"} | company,
            "fusion": {"fired_at": now, "enriched_at": now, "complete": True, "missing": []},
        }}
        for i in range(items)
    ]  # fmt: skip
    started = time.monotonic()
    helpers.bulk(es, docs, chunk_size=config.pipeline.bulk_chunk, max_chunk_bytes=50 << 20)
    es.indices.refresh(index=index)
    elapsed = time.monotonic() - started
    es.options(ignore_status=404).indices.delete(index=index)
    return elapsed
