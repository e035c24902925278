"""`fusion bench children`: orders with their lines, as a burst and as changes (docs/children.md).

A pipeline of orders and their lines (a children source, ``parent =
"order_id"``). Per run, beside that run's floor (the same source documents and
the orders' enriched documents, arrays included, bulk-written from Python: no
Kafka, no Spark):

1. **burst**: ``orders`` orders of ``lines`` lines each, lines first, into a
   `fusion run` that has enriched a wave of other orders (``warm``, not measured):
   the time from the first record sent to the last order's enriched document,
   the orders enriched per second, and the Elasticsearch lookups per order
   (the parts' ``_mget`` and the arrays' searches, from the run's own counts);
2. **one big order**: an order of ``big`` lines (written first, not
   measured), all of its lines changed at once: the time from the first
   change sent to the enriched document holding every change, and how many
   re-enrichments it took;
3. **steady changes**: ``steady`` lines, each of another order, each changed
   once at a tenth of the floor's orders per second: the latency from each
   change sent to its order's enriched document holding it (p50, p99).

Each figure is the median of the runs, beside the floor of its own run.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from elasticsearch import helpers

from fusion import pipeline
from fusion.bench import (
    PipelineProcess,
    bench_publisher,
    cores_between,
    cpu_snapshot,
    enriched_of,
    git_commit,
    last_enriched,
    machine,
    produce,
    server_pids,
    until,
)
from fusion.bench.children.records import children_config, line_row, order_key, order_row, orders_of
from fusion.bench.children.report import median_run
from fusion.bench.children.steps import (
    big_order,
    caught_up,
    per,
    steady,
    warm_up,
)
from fusion.core import PipelineConfig, Settings, now_iso
from fusion.elastic import client as es_client
from fusion.enricher import ChildRows, FoundDoc, build_enriched
from fusion.observe import Figures
from fusion.ops import teardown
from fusion.topology import SINGLE


@dataclass(frozen=True)
class ChildrenOptions:
    orders: int = 10_000
    lines: int = 10  # per order of the burst
    big: int = 5_000  # lines of the one big order, all changed at once
    steady: int = 10_000  # lines each changed once, at a tenth of the floor
    runs: int = 3
    # Orders of the unmeasured first wave (None: a twentieth of the burst's). As many as the
    # burst's: the burst meets a JVM that compiled its hot code, as after `fusion bench --warm`.
    warm: int | None = None
    # Seconds of unmeasured changes before the steady ones (the JVM compiles Spark's hot code
    # for minutes, as in `fusion bench sustain`).
    warmup_seconds: float = 120.0
    pipeline: tuple[tuple[str, str], ...] = ()  # [pipeline] options from the command line (--set)


def run_children(
    settings: Settings, options: ChildrenOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="fusion-children-"))
    runs = []
    for run in range(options.runs):
        config = children_config(settings, f"{uuid.uuid4().hex[:6]}{run}", options.pipeline)
        on_step(f"run {run + 1}/{options.runs}: floor")
        floor = children_floor(settings, config, options.orders, options.lines)
        on_step(f"run {run + 1}/{options.runs}: burst, one big order, steady changes")
        found = measure(config, options, options.orders / floor, workdir)
        burst = found["burst"]
        found["floor_seconds"] = round(floor, 3)
        found["floor_orders_per_second"] = round(options.orders / floor, 1)
        found["burst"] = burst | {"ratio_to_floor": round(burst["seconds"] / floor, 2)}
        runs.append(found)
    return {
        "kind": "children",
        "options": vars(options) | {"pipeline": dict(options.pipeline)},
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "median": median_run(runs),
        "runs": runs,
    }


def children_floor(settings: Settings, config: PipelineConfig, orders: int, lines: int) -> float:
    """Seconds to bulk-index the orders, their lines and their enriched documents from Python."""
    es = es_client.connect(settings.elasticsearch)
    prefix = f"bench-floor-{uuid.uuid4().hex[:8]}"
    now = now_iso()
    keys = [order_key("F", n) for n in range(orders)]
    rows = {key: [line_row(key, j, 1) for j in range(lines)] for key in keys}
    enriched = [
        build_enriched(config.key_field, key, {"orders": FoundDoc(order_row(key), 1)}, now, now,
                       arrays={"lines": ChildRows(rows[key])})
        for key in keys
    ]  # fmt: skip
    started = time.monotonic()
    actions = [
        {"_index": f"{prefix}-orders", "_id": key, "_source": order_row(key)} for key in keys
    ]
    actions += [
        {"_index": f"{prefix}-lines", "_id": row["line_id"], "_source": row}
        for key in keys
        for row in rows[key]
    ]
    actions += [{"_index": f"{prefix}-enriched", "_id": doc["order_id"], "_source": doc}
                for doc in enriched]  # fmt: skip
    helpers.bulk(es, actions, chunk_size=config.pipeline.bulk_chunk, max_chunk_bytes=50 << 20)
    es.indices.refresh(index=f"{prefix}-*")
    elapsed = time.monotonic() - started
    es.options(ignore_status=404).indices.delete(index=f"{prefix}-*")
    return elapsed


def measure(
    config: PipelineConfig, options: ChildrenOptions, floor_rate: float, workdir: Path
) -> dict[str, Any]:
    """The three steps of the module docstring in one pipeline: the burst in a first
    process (its counts are the burst's), the changes in a second."""
    teardown.delete_all(config)
    pipeline.prepare(config)
    es = es_client.connect(config.elasticsearch)
    with PipelineProcess(config, workdir) as run:
        run.wait_started()
        send = partial(produce, config, publisher=bench_publisher(config))
        warm = max(1, options.orders // 20 if options.warm is None else options.warm)
        send(orders_of(config, "W", warm, options.lines))
        until(lambda: enriched_of(es, config, "W") >= warm, run.check)
        servers = server_pids(config)
        cpu = _cpu(run, servers)
        first = time.time()
        send(orders_of(config, "B", options.orders, options.lines))
        until(lambda: enriched_of(es, config, "B") >= options.orders, run.check)
        cores = cores_between(cpu, _cpu(run, servers), time.time() - first)
        caught_up(config, run.check)
        burst_last = last_enriched(es, config, "B")
        burst = Figures(run.stop()["counters"])
    with PipelineProcess(config, workdir) as run:
        run.wait_started()
        send = partial(produce, config, publisher=bench_publisher(config))
        big = big_order(es, config, send, options.big, run.check)
        rate = floor_rate / 10
        warm_up(config, rate, (options.warmup_seconds, warm, options.lines), run.check)
        cpu = _cpu(run, servers)
        started = time.time()
        changed = steady(es, config, (options.steady, rate), run.check)
        steady_cores = cores_between(cpu, _cpu(run, servers), time.time() - started)
        changes = Figures(run.stop()["counters"])
    teardown.delete_all(config)
    seconds = burst_last - first
    burst_orders = warm + options.orders
    return {
        "burst": {
            "orders": options.orders,
            "seconds": round(seconds, 3),
            "orders_per_second": round(options.orders / seconds, 1),
            "lookups_per_order": round(burst.lookups / burst_orders, 4),
            "cores": cores,
            "batches": burst.batches(SINGLE),
            "phases": burst.phase_seconds(SINGLE),
            "task_stages": burst.stage_seconds(),
        },
        "big": big,
        "steady": changed
        | {"lookups_per_order": per(changes.lookups, changes.enriched), "cores": steady_cores}
        # Of the big order and the steady changes together (one process).
        | {
            "batches": changes.batches(SINGLE),
            "phases": changes.phase_seconds(SINGLE),
            "task_stages": changes.stage_seconds(),
        },
    }


def _cpu(run: PipelineProcess, servers: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of the run's processes, each server's, the benchmark's, the machine's."""
    assert run.process is not None
    return cpu_snapshot(run.process.pid, servers)
