"""`fusion bench formats`: what reading Debezium's envelope, or Avro, costs against JSON rows.

The same generated rows, once as plain JSON records, once as the change
events Debezium's PostgreSQL connector writes for their inserts (the envelope
with its ``source`` block, about three times the bytes of the row) and, when
a schema registry is set (``[registry] url``), once as Avro records in its
wire format, through the same batched pipeline, side by side in one run:

1. **burst**: per run the floor (the rows bulk-indexed from Python, no Kafka, no
   Spark), then each format's burst into a fresh pipeline, alternating which
   goes first; the median of ``runs``, each beside the floor of its run;
2. **sustained**: the sustained-rate search of :mod:`fusion.bench.sustain.run`
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

from fusion.bench import (
    BenchOptions,
    GenOptions,
    bench_config,
    build_dataset,
    git_commit,
    machine,
    run_floor,
)
from fusion.bench.runs.burst import run_mode
from fusion.bench.sustain import SustainOptions, run_sustain
from fusion.core import Settings, SourceFormat, now_iso

FORMATS: tuple[SourceFormat, ...] = ("json", "debezium")


def formats_of(settings: Settings) -> tuple[SourceFormat, ...]:
    """The formats measured: Avro too when a schema registry is set."""
    return (*FORMATS, "avro") if settings.registry.url else FORMATS


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
    measured = formats_of(settings)
    bursts: dict[str, list[dict[str, Any]]] = {fmt: [] for fmt in measured}
    for run in range(options.runs):
        on_step(f"run {run + 1}/{options.runs}: floor (bulk from Python)")
        floor = run_floor(settings, floor_data, rows)
        order = measured if run % 2 == 0 else measured[::-1]
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
    # The sustained searches too: one per format and run, in the other order each run (the
    # first search of a run met the merges of the bursts before it), each beside a floor.
    sustained: dict[str, list[dict[str, Any]]] = {fmt: [] for fmt in measured}
    reports: dict[str, list[dict[str, Any]]] = {fmt: [] for fmt in measured}
    for run in range(options.runs):
        on_step(f"sustained run {run + 1}/{options.runs}: floor (bulk from Python)")
        floor_rate = options.keys / run_floor(settings, floor_data, rows)
        for fmt in measured[::-1] if run % 2 == 0 else measured:
            on_step(f"sustained run {run + 1}/{options.runs}: rate search, {fmt}")
            report = run_sustain(settings, replace(options.sustain, format=fmt), on_step)
            reports[fmt].append(report)
            sustained[fmt].append(_sustained(report, floor_rate))
    return {
        "kind": "formats",
        "formats": list(measured),
        "keys": options.keys,
        "sources": options.sources,
        "runs": options.runs,
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "burst": {fmt: _median(found) for fmt, found in bursts.items()},
        "burst_runs": bursts,
        "sustained": {fmt: _median_sustained(runs) for fmt, runs in sustained.items()},
        "sustained_runs": sustained,
        "sustain_reports": reports,
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time (the lower middle), and every run's fraction."""
    ordered = sorted(runs, key=lambda r: r["wall_seconds"])
    middle = ordered[(len(ordered) - 1) // 2]
    return middle | {"fractions": [r["fraction_of_floor"] for r in runs]}


def _sustained(report: dict[str, Any], floor_rate: float) -> dict[str, Any]:
    """One search's two rates (within the p99 objective; kept up at all), beside the floor."""
    best, kept = report.get("sustained") or {}, report.get("kept_up") or {}
    rate, kept_rate = best.get("keys_per_second"), kept.get("keys_per_second")
    return {
        "sustained_keys_per_second": rate,
        "sustained_p99": best.get("latency_p99"),
        "kept_up_keys_per_second": kept_rate,
        "floor_keys_per_second": round(floor_rate),
        "sustained_fraction": None if rate is None else round(rate / floor_rate, 3),
        "kept_up_fraction": None if kept_rate is None else round(kept_rate / floor_rate, 3),
    }


def _median_sustained(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs (the lower middle), and every run's."""

    def middle(name: str) -> Any:
        values = sorted(v for r in runs if (v := r[name]) is not None)
        return values[(len(values) - 1) // 2] if values else None

    names = ("sustained_keys_per_second", "sustained_p99", "kept_up_keys_per_second")
    fractions = ("sustained_fraction", "kept_up_fraction", "floor_keys_per_second")
    return {name: middle(name) for name in (*names, *fractions)} | {"runs": runs}


def markdown(report: dict[str, Any]) -> str:
    burst, sustained = report["burst"], report["sustained"]
    measured = report.get("formats") or list(FORMATS)  # a report from before Avro: both
    lines = [
        f"{' and '.join(measured[1:])} against plain JSON rows, N = {report['sources']}, "
        f"{report['machine']['cores']} cores; commit {report['commit']}, {report['date']}",
        "",
        f"Burst of {report['keys']:,} keys, median of {report['runs']} runs, each beside the "
        "floor of its run (the rows bulk-indexed from Python):",
        "",
        "| format | wall (s) | keys/s | floor keys/s | fraction of floor (each run) | p99 (s) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for fmt in measured:
        b = burst[fmt]
        each = ", ".join(f"{f:.2f}" for f in b["fractions"])
        lines.append(
            f"| {fmt} | {b['wall_seconds']:.2f} | {b['keys_per_second']:,.0f} | "
            f"{b['floor_keys_per_second']:,} | {b['fraction_of_floor']:.2f} ({each}) | "
            f"{_num(b['latency_p99'])} |"
        )
    lines += [
        "",
        f"Sustained, median of {report['runs']} searches per format (same steps, the order "
        "alternating), each run beside its floor; a fraction is of that run's floor:",
        "",
        "| format | within p99 objective keys/s (fraction) | its p99 (s) "
        "| kept up with keys/s (fraction) | each run's kept-up fraction |",
        "|---|---:|---:|---:|---|",
    ]
    for fmt in measured:
        s = sustained[fmt]
        each = ", ".join(_num(r["kept_up_fraction"]) for r in s["runs"])
        lines.append(
            f"| {fmt} | {_num(s['sustained_keys_per_second'], 0)} "
            f"({_num(s['sustained_fraction'])}) | {_num(s['sustained_p99'])} | "
            f"{_num(s['kept_up_keys_per_second'], 0)} ({_num(s['kept_up_fraction'])}) | {each} |"
        )
    lines += ["", *_costs(burst, sustained, measured[1:])]
    return "\n".join(lines) + "\n"


def _costs(burst: dict[str, Any], sustained: dict[str, Any], others: list[str]) -> list[str]:
    """What reading each format costs: 1 - its rate / JSON's, for each rate."""

    def cost(json_rate: float | None, rate: float | None) -> str:
        if not json_rate or rate is None:
            return "-"
        return f"{(1 - rate / json_rate) * 100:.1f} %"

    rates = (
        ("the burst", "keys_per_second", burst),
        ("the sustained rate within the p99 objective", "sustained_keys_per_second", sustained),
        ("the highest rate kept up with", "kept_up_keys_per_second", sustained),
    )
    what = {"debezium": "the envelope", "avro": "Avro"}
    return [
        f"Reading {what.get(fmt, fmt)} costs {cost(of['json'][name], of[fmt][name])} of {it}."
        for fmt in others
        for it, name, of in rates
    ]


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"
