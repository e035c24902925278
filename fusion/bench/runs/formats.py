"""`fusion bench --formats`: what reading Debezium's envelope costs, against plain JSON rows.

The same generated rows, once as plain JSON records and once as the change
events Debezium's PostgreSQL connector writes for their inserts (the envelope
with its ``source`` block, about three times the bytes of the row), through
the same batched pipeline, side by side in one run:

1. **burst**: per run the floor (the rows bulk-indexed from Python, no Kafka, no
   Spark), then each format's burst into a fresh pipeline, alternating which
   goes first; the median of ``runs``, each beside the floor of its run;
2. **sustained**: the sustained-rate search of :mod:`fusion.bench.runs.sustain`
   for each format, with the same steps.

Every rate is also given as a fraction of the floor rate (keys per second at
which this machine bulk-indexes the N + 1 documents of a key).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from fusion.bench.baselines import run_floor
from fusion.bench.generator import GenOptions, build_dataset
from fusion.bench.report import git_commit, machine
from fusion.bench.runs.burst import BenchOptions, bench_config, run_mode
from fusion.bench.runs.sustain import SustainOptions, run_sustain
from fusion.core.config_values import SourceFormat
from fusion.core.events import now_iso
from fusion.core.settings import Settings

FORMATS: tuple[SourceFormat, ...] = ("json", "debezium")


@dataclass(frozen=True)
class FormatOptions:
    keys: int = 20_000
    sources: int = 4
    runs: int = 3
    seed: int = 42
    sustain: SustainOptions = field(default_factory=SustainOptions)


def run_formats(
    settings: Settings, options: FormatOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    workdir = Path(tempfile.mkdtemp(prefix="fusion-formats-"))
    gen = GenOptions(keys=options.keys, seed=options.seed, duplicate_rate=0, missing_rate=0)
    rows = bench_config(settings, "batched", BenchOptions(options.keys, options.sources), tag)
    floor_data = build_dataset(rows, gen)  # the floor indexes rows, whatever the format
    on_step("warming Elasticsearch up (an untimed floor run)")
    run_floor(settings, floor_data, rows)
    bursts: dict[str, list[dict[str, Any]]] = {fmt: [] for fmt in FORMATS}
    for run in range(options.runs):
        on_step(f"run {run + 1}/{options.runs}: floor (bulk from Python)")
        floor = run_floor(settings, floor_data, rows)
        order = FORMATS if run % 2 == 0 else FORMATS[::-1]
        for fmt in order:
            on_step(f"run {run + 1}/{options.runs}: a burst of {options.keys:,} keys as {fmt}")
            bench = BenchOptions(options.keys, options.sources, ("batched",), format=fmt)
            config = bench_config(settings, "batched", bench, f"{tag}{fmt[0]}{run}")
            result = run_mode(config, build_dataset(config, gen), "batched", 0.0, workdir)
            floor_rate = options.keys / floor
            bursts[fmt].append(
                asdict(result)
                | {"floor_seconds": round(floor, 3), "floor_keys_per_second": round(floor_rate)}
                | {"fraction_of_floor": round(result.keys_per_second / floor_rate, 3)}
            )
    sustained = {}
    for fmt in FORMATS:
        on_step(f"sustained-rate search, {fmt}")
        sustained[fmt] = run_sustain(settings, replace(options.sustain, format=fmt), on_step)
    return {
        "kind": "formats",
        "keys": options.keys,
        "sources": options.sources,
        "runs": options.runs,
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "burst": {fmt: _median(found) for fmt, found in bursts.items()},
        "burst_runs": bursts,
        "sustained": {fmt: _sustained(report) for fmt, report in sustained.items()},
        "sustain_reports": sustained,
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time (the lower middle), and every run's fraction."""
    ordered = sorted(runs, key=lambda r: r["wall_seconds"])
    middle = ordered[(len(ordered) - 1) // 2]
    return middle | {"fractions": [r["fraction_of_floor"] for r in runs]}


def _sustained(report: dict[str, Any]) -> dict[str, Any]:
    best, kept = report.get("sustained") or {}, report.get("kept_up") or {}
    return {
        "sustained_keys_per_second": best.get("keys_per_second"),
        "sustained_p99": best.get("latency_p99"),
        "kept_up_keys_per_second": kept.get("keys_per_second"),
    }


def markdown(report: dict[str, Any]) -> str:
    burst, sustained = report["burst"], report["sustained"]
    lines = [
        f"Debezium change events against plain JSON rows, N = {report['sources']}, "
        f"{report['machine']['cores']} cores; commit {report['commit']}, {report['date']}",
        "",
        f"Burst of {report['keys']:,} keys, median of {report['runs']} runs, each beside the "
        "floor of its run (the rows bulk-indexed from Python):",
        "",
        "| format | wall (s) | keys/s | floor keys/s | fraction of floor (each run) | p99 (s) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for fmt in FORMATS:
        b = burst[fmt]
        each = ", ".join(f"{f:.2f}" for f in b["fractions"])
        lines.append(
            f"| {fmt} | {b['wall_seconds']:.2f} | {b['keys_per_second']:,.0f} | "
            f"{b['floor_keys_per_second']:,} | {b['fraction_of_floor']:.2f} ({each}) | "
            f"{_num(b['latency_p99'])} |"
        )
    lines += ["", "Sustained (one search each, same steps):", ""]
    lines += ["| format | sustained keys/s | its p99 (s) | kept up with keys/s |"]
    lines += ["|---|---:|---:|---:|"]
    for fmt in FORMATS:
        s = sustained[fmt]
        lines.append(
            f"| {fmt} | {_num(s['sustained_keys_per_second'], 0)} | {_num(s['sustained_p99'])} | "
            f"{_num(s['kept_up_keys_per_second'], 0)} |"
        )
    json_rate = burst["json"]["keys_per_second"]
    cost = 1 - burst["debezium"]["keys_per_second"] / json_rate if json_rate else None
    lines += ["", f"Reading the envelope costs {_num(cost and cost * 100, 1)} % of the burst rate."]
    return "\n".join(lines) + "\n"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"
