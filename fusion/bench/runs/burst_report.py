"""The burst benchmark's report: its table of modes, the CPU each part spent, its chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusion.bench import PART_NAMES, set_lines, write_files


def _beside(report: dict[str, Any]) -> str:
    """How the floor shared the machine (reports before the change say nothing)."""
    return (
        ", beside the generator sending the records" if report.get("floor_beside_generator") else ""
    )


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
        f"(N·K + K documents bulk-indexed from Python{_beside(report)}), "
        f"{machine['cores']} cores",
        "",
        f"{report.get('date', '?')}, commit {report.get('commit') or '?'}, "
        f"Spark master {report.get('spark_master', '?')}, median of {report['runs']} run(s); "
        f"pyspark {machine['pyspark']}, Kafka {machine['kafka']}, "
        f"Elasticsearch {machine['elasticsearch']}, Python {machine['python']}",
        "",
        *set_lines(report.get("pipeline_set") or {}),
        "| mode | ES lookups | per key | wasted | bulk writes | docs fetched | wall s | x floor "
        "| keys/s | first key s | p50 s | p95 s | p99 s | driver MB (Python / JVM) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in report["modes"]:
        lines.append(
            f"| {m['mode']} | {m['es_requests']:,} | {m['requests_per_key']} "
            f"| {m['wasted_requests']:,} | {m.get('bulk_requests', 0):,} | {m['docs_fetched']:,} "
            f"| {m['wall_seconds']:.1f} | {m['ratio_to_floor']} | {m['keys_per_second']:,} "
            f"| {m.get('first_key_seconds')} | {m['latency_p50']} | {m['latency_p95']} "
            f"| {m['latency_p99']} "
            f"| {m.get('driver_python_peak_mb')} / {m.get('driver_jvm_peak_mb')} |"
        )
    lines += _cpu_lines(report)
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


def _cpu_lines(report: dict[str, Any]) -> list[str]:
    """What each part's CPU came to over a mode's measured burst, in µs a record sent."""
    lines = []
    for m in report["modes"]:
        cpu: dict[str, float] = m.get("cpu_seconds") or {}
        if not cpu:
            continue
        records = m["keys"] * m["sources"]
        parts = [
            f"{name} {cpu[part]:.2f} s ({cpu[part] / records * 1e6:,.0f} µs)"
            for part, name in PART_NAMES.items()
            if part in cpu
        ]
        lines += [
            "",
            f"{m['mode']}, CPU over the measured burst ({records:,} records; µs a record): "
            + ", ".join(parts)
            + f"; the machine {cpu.get('machine', 0):.2f} s",
        ]
    return lines
