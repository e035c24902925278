"""`fusion bench <benchmark>`: each benchmark, with progress and its report."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from fusion.cli.console import err, out
from fusion.cli.terminal import Tracker
from fusion.core import ConfigError, Settings
from fusion.elastic import client as es_client
from fusion.kafka import client as kafka_client

if TYPE_CHECKING:
    from fusion.bench import BenchOptions
    from fusion.bench.sustain import SustainOptions


def bench_burst_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench.runs import burst as bench
    from fusion.bench.runs import burst_report as report_files

    options = _burst_options(args)
    _servers_answer(settings)
    # The warm-up; per run the floor, the modes and the counter alone on each engine.
    steps = 1 + args.runs * (1 + len(options.modes) + len(bench.ENGINES))
    with Tracker(err, "benchmark", "steps", steps, rate=False) as tracker:
        report = bench.run_bench(settings, options, on_step=tracker.step)
    return print_bench(report_files.markdown(report), report_files.write_report(report, args.out))


def _burst_options(args: argparse.Namespace) -> BenchOptions:
    """A burst's options, each checked before any server is asked."""
    from fusion.bench import MODES, BenchOptions

    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigError("--modes", "", f"unknown mode(s) {unknown}; choose from {MODES}")
    keys = 14_000 if args.keys is None else args.keys
    if keys < 1 or args.sources < 2:
        raise ConfigError("--keys/--sources", "", "need at least 1 key and 2 sources")
    return BenchOptions(
        keys, args.sources, modes, args.seed, args.runs, args.rate, args.max_offsets, args.warm,
        pipeline=_pipeline_set(args.set or ()),
    )  # fmt: skip


def bench_formats_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench import report as report_files
    from fusion.bench.runs import formats

    _servers_answer(settings)
    options = formats.FormatOptions(
        keys=20_000 if args.keys is None else args.keys,
        sources=args.sources,
        runs=args.runs,
        seed=args.seed,
        sustain=_sustain_options(args),
    )
    with Tracker(err, "formats benchmark", "steps", rate=False) as tracker:
        report = formats.run_formats(settings, options, on_step=tracker.step)
    text = formats.markdown(report)
    name = f"formats-n{report['sources']}"
    return print_bench(text, report_files.write_text_files(args.out, name, report, text))


def bench_fanout_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench import report as report_files
    from fusion.bench.runs import fanout, fanout_report

    _servers_answer(settings)
    default = (100_000,) if args.chain else (10_000, 100_000)
    sizes = default if args.keys is None else (args.keys,)
    options = fanout.FanoutOptions(sizes, args.runs, args.page, chain=args.chain)
    with Tracker(err, "fan-out benchmark", "steps", rate=False) as tracker:
        report = fanout.run_fanout(settings, options, on_step=tracker.step)
    text = fanout_report.markdown(report)
    name = "fanout-chain" if args.chain else "fanout"
    return print_bench(text, report_files.write_text_files(args.out, name, report, text))


def bench_children_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench import report as report_files
    from fusion.bench.children import report, run

    _servers_answer(settings)
    sizes = {} if args.keys is None else {"orders": args.keys, "steady": args.keys}
    sizes |= {"warm": args.warm, "pipeline": _pipeline_set(args.set or ())}
    options = run.ChildrenOptions(runs=args.runs, **sizes)
    with Tracker(err, "children benchmark", "steps", rate=False) as tracker:
        found = run.run_children(settings, options, on_step=tracker.step)
    text = report.markdown(found)
    return print_bench(text, report_files.write_text_files(args.out, "children", found, text))


def bench_sustain_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench import report as report_files
    from fusion.bench.sustain import report as sustain_report
    from fusion.bench.sustain import run as bench_sustain

    _servers_answer(settings)
    options = _sustain_options(args, args.set or ())
    reports = []
    with Tracker(err, "sustained-load benchmark", "steps", rate=False) as tracker:
        for run in range(args.runs):
            # Each run from a fresh pipeline, beside its own floor.
            prefix = f"run {run + 1}/{args.runs}: " if args.runs > 1 else ""
            step = partial(_prefixed, tracker.step, prefix)
            reports.append(bench_sustain.run_sustain(settings, options, on_step=step))
    if len(reports) == 1:
        return print_bench(
            sustain_report.markdown(reports[0]), sustain_report.write_report(reports[0], args.out)
        )
    each = [
        p for n, r in enumerate(reports, 1) for p in sustain_report.write_report(r, args.out, n)
    ]
    report = sustain_report.of_runs(reports)
    text = sustain_report.runs_markdown(report)
    paths = report_files.write_text_files(args.out, "sustain-runs", report, text)
    return print_bench(text, (*paths, *each))


def _prefixed(step: Callable[[str], None], prefix: str, text: str) -> None:
    step(prefix + text)


def bench_soak_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench.soak import report as soak_report
    from fusion.bench.soak import run as soak

    if args.minutes <= 0 or args.kill_every <= 0 or args.window <= 0 or args.sources < 2:
        raise ConfigError(
            "--minutes/--kill-every/--window/--sources",
            "",
            "need positive minutes, kill interval and window, and at least 2 sources",
        )
    _servers_answer(settings)
    options = soak.SoakOptions(
        minutes=args.minutes,
        window_minutes=args.window,
        kill_every_minutes=args.kill_every,
        es_restart_minute=args.minutes * 5 / 12,  # 25 of 60: between two kills
        rate=args.rate,
        sources=args.sources,
        seed=args.seed,
    )
    with Tracker(err, "soak", "steps", rate=False) as tracker:
        report = soak.run_soak(settings, options, on_step=tracker.step)
    return print_bench(soak_report.markdown(report), soak_report.write_report(report, args.out))


def bench_idle_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench.runs import idle as bench_idle

    _servers_answer(settings)
    with Tracker(err, "idle benchmark", "scenarios", rate=False) as tracker:
        tracker.step("idle scenarios and one deadline")
        report = bench_idle.run_idle(settings)
    return print_bench(bench_idle.markdown(report), bench_idle.write_report(report, args.out))


def bench_memory_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench.runs import memory

    keys = memory.MemoryOptions.keys if args.keys is None else args.keys
    if keys < 1:
        raise ConfigError("--keys", str(keys), "need at least 1 key")
    _servers_answer(settings)
    options = memory.MemoryOptions(keys=keys, heap=args.heap)
    runs = len(options.budgets) * len(options.record_bytes)
    with Tracker(err, "memory benchmark", "runs", runs, rate=False) as tracker:
        report = memory.run_memory(settings, options, on_step=tracker.step)
    return print_bench(memory.markdown(report), memory.write_report(report, args.out))


def bench_status_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench.runs import status

    sizes = status.StatusOptions.keys if args.keys is None else (args.keys,)
    if min(sizes) < 1:
        raise ConfigError("--keys", str(args.keys), "need at least 1 key")
    _servers_answer(settings)
    with Tracker(err, "status benchmark", "sizes", len(sizes), rate=False) as tracker:
        report = status.run_status(settings, status.StatusOptions(sizes), on_step=tracker.step)
    return print_bench(status.markdown(report), status.write_report(report, args.out))


def bench_reconcile_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench.runs import reconcile

    keys = 100_000 if args.keys is None else args.keys
    if keys < 1:
        raise ConfigError("--keys", str(keys), "need at least 1 key")
    _servers_answer(settings)
    with Tracker(err, "reconcile benchmark", "steps", 2, rate=False) as tracker:
        report = reconcile.run_reconcile(settings, keys, on_step=tracker.step)
    return print_bench(reconcile.markdown(report), reconcile.write_report(report, args.out))


def print_bench(text: str, paths: tuple[Path, ...]) -> int:
    out.print(text, markup=False)
    out.print("written: " + ", ".join(str(p) for p in paths))
    return 0


def bench_scale_command(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import datetime

    from fusion.bench.runs import burst_report as report_files
    from fusion.bench.runs import scale

    _servers_answer(settings)
    with Tracker(err, "scaling benchmark", "steps", rate=False) as tracker:
        reports = scale.run_scale(settings, on_step=tracker.step)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stamp}-scale.json").write_text(json.dumps(reports, indent=2))
    scale.scale_chart(reports, args.out / f"{stamp}-scale.png")
    for report in reports:
        out.print(report_files.markdown(report), markup=False)
    out.print(f"written: {args.out / (stamp + '-scale.json')}, {args.out / (stamp + '-scale.png')}")
    return 0


def _sustain_options(args: argparse.Namespace, pipeline: Sequence[str] = ()) -> SustainOptions:
    """The sustained-load options, checked; ``pipeline``: ``--set``'s pairs."""
    from fusion.bench.sustain import SustainOptions

    if args.sources < 2 or args.step_seconds < 3 or not 0 < args.start_rate <= args.max_rate:
        raise ConfigError(
            "--sources/--step-seconds/--start-rate/--max-rate",
            "",
            "need at least 2 sources, steps of 3 s or more and 0 < start rate <= max rate",
        )
    at_rates = tuple(args.at or ())
    at_floor = tuple(args.at_floor) if args.at_floor else (0.1,)
    positive = all(value > 0 for value in (*at_rates, *at_floor))
    if args.slo <= 0 or not positive or args.warmup_seconds < 0 or args.runs < 1:
        raise ConfigError(
            "--slo/--at/--at-floor/--warmup-seconds/--runs",
            "",
            "need a positive objective, rates and fractions, a warm-up >= 0 and runs >= 1",
        )
    return SustainOptions(
        sources=args.sources,
        step_seconds=args.step_seconds,
        start_rate=args.start_rate,
        max_rate=args.max_rate,
        seed=args.seed,
        slo=args.slo,
        at_rates=at_rates,
        at_floor=at_floor,
        warmup_seconds=args.warmup_seconds,
        search=not args.no_search,
        pipeline=_pipeline_set(pipeline),
    )


def _pipeline_set(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``--set OPTION=VALUE`` pairs, each checked against the [pipeline] table's own rules."""
    from pydantic import ValidationError

    from fusion.core import PipelineSection, config_error

    parts = [pair.partition("=") for pair in pairs]
    if any(not name or not sep for name, sep, _ in parts):
        raise ConfigError("--set", "", "write each option as OPTION=VALUE, e.g. layout=stages")
    found = {name: value for name, _, value in parts}
    try:
        PipelineSection.model_validate({"name": "bench", "key_field": "txn_id", **found})
    except ValidationError as exc:
        raise config_error(exc, "--set", {}) from None
    return tuple(found.items())


BENCH_HANDLERS = {
    "bench burst": bench_burst_command,
    "bench sustain": bench_sustain_command,
    "bench formats": bench_formats_command,
    "bench fanout": bench_fanout_command,
    "bench children": bench_children_command,
    "bench soak": bench_soak_command,
    "bench idle": bench_idle_command,
    "bench memory": bench_memory_command,
    "bench status": bench_status_command,
    "bench reconcile": bench_reconcile_command,
    "bench scale": bench_scale_command,
}


def _servers_answer(settings: Settings) -> None:
    """Kafka and Elasticsearch answer, or one line saying which does not (before any step)."""
    kafka_client.check(settings.kafka)
    es_client.check(settings.elasticsearch)
