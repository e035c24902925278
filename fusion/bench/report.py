"""The benchmarks' reports: Markdown tables, charts and the files they go to.

Each report names the date, the commit, the machine and the server versions
it was measured on (:func:`machine`), so a number in the README can always be
traced to the run that produced it.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from fusion.core import Settings
from fusion.elastic import client as es_client
from fusion.infra import local_broker_version


def git_commit() -> str | None:
    """The checkout's commit, ``+changes`` if the tree differs from it (None outside git)."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return None
    changed = git("status", "--porcelain", "-uno", "--", "fusion", "indexers", "acks")
    return commit + ("+changes" if changed else "")


def machine(settings: Settings) -> dict[str, Any]:
    """The machine and the versions measured on, the servers' read from the servers."""
    import pyspark

    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "kafka": local_broker_version(settings.kafka.bootstrap) or "unknown (not on this machine)",
        "elasticsearch": es_client.check(settings.elasticsearch),
    }


def set_lines(options: dict[str, str]) -> list[str]:
    """The [pipeline] options a run set from the command line (a lever measured), if any."""
    if not options:
        return []
    return ["Set for this run: " + ", ".join(f"`{k} = {v}`" for k, v in options.items()), ""]


def markdown(report: dict[str, Any]) -> str:
    n, k = report["sources"], report["keys"]
    pace = f"produced at {report['rate']:,.0f} records/s" if report.get("rate") else "burst"
    if warm := int(report.get("warm") or 0):
        first = "a first burst" if warm == 1 else f"{warm} bursts"
        pace += (
            f", after {first} of the same size on other keys (unmeasured: the JVM compiles"
            " its hot code meanwhile); the counts cover every burst"
        )
    machine = report["machine"]
    lines = [
        f"{k:,} keys x {n} sources ({pace}), floor {report['floor_seconds']:.2f} s "
        f"(N·K + K documents bulk-indexed from Python), {machine['cores']} cores",
        "",
        f"{report.get('date', '?')}, commit {report.get('commit') or '?'}, "
        f"Spark master {report.get('spark_master', '?')}, median of {report['runs']} run(s); "
        f"pyspark {machine['pyspark']}, Kafka {machine['kafka']}, "
        f"Elasticsearch {machine['elasticsearch']}, Python {machine['python']}",
        "",
        *set_lines(report.get("pipeline_set") or {}),
        "| mode | ES lookups | per key | wasted | bulk writes | docs fetched | wall s | x floor "
        "| keys/s | p50 s | p95 s | p99 s | driver MB (Python / JVM) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in report["modes"]:
        lines.append(
            f"| {m['mode']} | {m['es_requests']:,} | {m['requests_per_key']} "
            f"| {m['wasted_requests']:,} | {m.get('bulk_requests', 0):,} | {m['docs_fetched']:,} "
            f"| {m['wall_seconds']:.1f} | {m['ratio_to_floor']} | {m['keys_per_second']:,} "
            f"| {m['latency_p50']} | {m['latency_p95']} | {m['latency_p99']} "
            f"| {m.get('driver_python_peak_mb')} / {m.get('driver_jvm_peak_mb')} |"
        )
    for engine, counter in (
        ("JVM", report.get("counter_only")),
        ("Python", report.get("counter_only_python")),
    ):
        if counter:
            lines += [
                "",
                f"counter alone, {engine} engine{_of_runs(counter)}: {counter['acks']:,} acks in "
                f"{counter['seconds']} s of micro-batch time = {counter['acks_per_second']:,} "
                f"acks/s ({counter['fired']:,} keys fired); its first batch, in a cold JVM: "
                f"{_cold(counter)}",
                *_beside_spark(counter),
            ]
    return "\n".join(lines) + "\n"


def _of_runs(counter: dict[str, Any]) -> str:
    rates = counter.get("runs") or []
    if len(rates) < 2:
        return ""
    return f" (median of {len(rates)} runs: {', '.join(f'{r:,}' for r in rates)} acks/s)"


def _beside_spark(counter: dict[str, Any]) -> list[str]:
    """The counter's rates as fractions of Spark counting the same acks alone, in the same run."""
    baseline, share = counter.get("baseline"), counter.get("of_baseline")
    if not baseline or not share:
        return []
    runs = share.get("runs") or []
    each = f" (each run: {', '.join(str(s['warm']) for s in runs)})" if len(runs) > 1 else ""
    return [
        "",
        f"  as a fraction of Spark alone over the same acks ({baseline['operator']}; the "
        f"median run's {baseline['acks_per_second']:,} acks/s warm, cold first batch "
        f"{_cold(baseline)}): warm **{share['warm']}**{each}, cold {share['cold']}",
    ]


def _cold(counter: dict[str, Any]) -> str:
    cold = counter.get("cold_first_batch") or {}
    rate = cold.get("acks_per_second", 0)
    return f"{cold.get('acks', 0):,} acks in {cold.get('seconds')} s = {rate:,} acks/s"


def chart(report: dict[str, Any], path: Path) -> None:
    """Requests per key and wall time vs floor, per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m["mode"] for m in report["modes"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.bar(modes, [m["requests_per_key"] for m in report["modes"]], color="#4c72b0")
    left.set_title("Elasticsearch requests per enriched key")
    left.set_yscale("symlog", linthresh=0.01)
    for i, m in enumerate(report["modes"]):
        left.annotate(f"{m['requests_per_key']:g}", (i, m["requests_per_key"]), ha="center",
                      va="bottom")  # fmt: skip
    right.bar(modes, [m["ratio_to_floor"] for m in report["modes"]], color="#dd8452")
    right.axhline(1.0, color="black", linewidth=1, linestyle="--", label="floor")
    right.set_title("end-to-end wall time / floor")
    right.legend()
    fig.suptitle(f"{report['keys']:,} keys x {report['sources']} sources")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path, Path]:
    name = f"k{report['keys']}-n{report['sources']}"
    return write_files(out_dir, name, report, markdown(report), chart)


def write_files(
    out_dir: Path,
    name: str,
    report: dict[str, Any],
    text: str,
    draw: Callable[[dict[str, Any], Path], None],
) -> tuple[Path, Path, Path]:
    """``<out_dir>/<timestamp>-<name>.{json,md,png}``: the report, its Markdown, its chart."""
    json_path, md_path = write_text_files(out_dir, name, report, text)
    png_path = md_path.with_suffix(".png")
    draw(report, png_path)
    return json_path, md_path, png_path


def write_text_files(
    out_dir: Path, name: str, report: dict[str, Any], text: str
) -> tuple[Path, Path]:
    """``<out_dir>/<timestamp>-<name>.{json,md}``: the report and its Markdown."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = out_dir / f"{stamp}-{name}"
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = base.with_suffix(".json"), base.with_suffix(".md")
    json_path.write_text(json.dumps(report, indent=2))
    md_path.write_text(text)
    return json_path, md_path


def mode_result(report: dict[str, Any], mode: str) -> dict[str, Any] | None:
    """One mode's results in a burst report (None: the report has no such mode)."""
    return next((m for m in report["modes"] if m["mode"] == mode), None)


def lower_median(values: list[float]) -> float | None:
    """The median (the lower middle of an even count, a value some run had), None for none."""
    return sorted(values)[(len(values) - 1) // 2] if values else None


def rounded(value: float | None) -> float | None:
    """Seconds to the millisecond, for the reports (None stays None)."""
    return None if value is None else round(value, 3)
