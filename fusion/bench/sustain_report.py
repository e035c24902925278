"""The sustained-load benchmark's report: its Markdown table and chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusion.bench.report import write_files


def markdown(report: dict[str, Any]) -> str:
    machine_ = report["machine"]
    best = report["sustained"]
    lines = [
        f"Sustained load, N = {report['sources']}, steps of {report['step_seconds']:.0f} s, "
        f"{machine_['cores']} cores",
        "",
        f"{report['date']}, commit {report.get('commit') or '?'}, Spark master "
        f"{report['spark_master']}; pyspark {machine_['pyspark']}, Kafka {machine_['kafka']}, "
        f"Elasticsearch {machine_['elasticsearch']}, Python {machine_['python']}",
        "",
    ]
    if best is None:
        lines.append("No rate was sustained, down to 1/8 of the start rate.")
    else:
        lines.append(
            f"**Highest sustained rate: {best['keys_per_second']:,.0f} keys/s** "
            f"({best['keys_per_second'] * report['sources']:,.0f} records/s)"
        )
    lines += [
        "",
        "| step | keys/s asked | sent | keys | p50 s | p95 s | p99 s | max s | lookups/key "
        "| backlog mid → last | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    rows = [("search", s) for s in report["search"]] + [
        (f"{s['fraction']:.0%}", s) for s in report["at_fraction"] if s["fraction"] < 1
    ]
    for label, s in rows:
        lines.append(
            f"| {label} | {s['keys_per_second']:,.0f} | {s['sent_keys_per_second']:,.0f} "
            f"| {s['keys']:,} | {s['latency_p50']} | {s['latency_p95']} | {s['latency_p99']} "
            f"| {s['latency_max']} | {s['requests_per_key']} "
            f"| {s['backlog_middle']:,} → {s['backlog_last']:,} | {s['why']} |"
        )
    return "\n".join(lines) + "\n"


def chart(report: dict[str, Any], path: Path) -> None:
    """Latency CDF at 25/50/100 % of the sustained rate; latency p50/p99 along the search."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for s in report["at_fraction"]:
        if s["cdf"]:
            ys = [(i + 1) / len(s["cdf"]) for i in range(len(s["cdf"]))]
            left.plot(s["cdf"], ys, label=f"{s['keys_per_second']:,.0f} keys/s")
    left.set_xlabel("seconds from a key's last source record to its searchable enriched doc")
    left.set_ylabel("fraction of keys")
    left.set_title("latency CDF")
    left.legend()
    search = sorted(report["search"], key=lambda s: s["keys_per_second"])
    rates = [s["keys_per_second"] for s in search]
    right.plot(rates, [s["latency_p50"] for s in search], marker="o", label="p50")
    right.plot(rates, [s["latency_p99"] for s in search], marker="o", label="p99")
    for s in search:
        if not s["sustained"]:
            right.axvline(s["keys_per_second"], color="red", linestyle=":", linewidth=1)
    right.set_xlabel("keys/s (red: not sustained)")
    right.set_ylabel("latency s")
    right.set_title("latency along the search")
    right.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path, Path]:
    return write_files(out_dir, f"sustain-n{report['sources']}", report, markdown(report), chart)
