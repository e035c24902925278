"""The sustained-load benchmark's report: its Markdown table and chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusion.bench.report import write_files


def markdown(report: dict[str, Any]) -> str:
    machine_ = report["machine"]
    best, kept = report["sustained"], report.get("kept_up")
    slo = report.get("slo_seconds", 3.0)
    lines = [
        f"Sustained load, N = {report['sources']}, steps of {report['step_seconds']:.0f} s, "
        f"{machine_['cores']} cores, latency objective p99 <= {slo:g} s",
        "",
        f"{report['date']}, commit {report.get('commit') or '?'}, Spark master "
        f"{report['spark_master']}, trigger {report.get('trigger_interval')}, refresh "
        f"{report.get('refresh_interval')}; pyspark {machine_['pyspark']}, Kafka "
        f"{machine_['kafka']}, Elasticsearch {machine_['elasticsearch']}, "
        f"Python {machine_['python']}",
        "",
    ]
    if best is None:
        lines.append(f"No rate was sustained with p99 <= {slo:g} s.")
    else:
        lines.append(
            f"**Highest sustained rate (p99 <= {slo:g} s): {best['keys_per_second']:,.0f} keys/s** "
            f"({best['keys_per_second'] * report['sources']:,.0f} records/s)"
        )
    if kept is not None:
        lines.append("")
        lines.append(
            f"Highest rate kept up with, whatever the latency: {kept['keys_per_second']:,.0f} "
            f"keys/s (p50 {kept['latency_p50']} s, p99 {kept['latency_p99']} s)"
        )
    lines += ["", *hops_table(report), ""]
    lines += [
        "| step | keys/s asked | sent | keys | p50 s | p95 s | p99 s | max s | lookups/key "
        "| backlog (mean, rise) | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    rows = [("search", s) for s in report["search"]]
    rows += [(f"{s['fraction']:.0%}", s) for s in report["at_fraction"] if s["fraction"] < 1]
    rows += [("fixed", s) for s in report.get("at_rates", [])]
    for label, s in rows:
        lines.append(
            f"| {label} | {s['keys_per_second']:,.0f} | {s['sent_keys_per_second']:,.0f} "
            f"| {s['keys']:,} | {s['latency_p50']} | {s['latency_p95']} | {s['latency_p99']} "
            f"| {s['latency_max']} | {s['requests_per_key']} "
            f"| {s['backlog_mean']:,}, {s['backlog_rise']:+,} | {s['why']} |"
        )
    return "\n".join(lines) + "\n"


def hops_table(report: dict[str, Any]) -> list[str]:
    """Latency per hop (p50/p95/p99 s) at each reported rate, from the records' Kafka timestamps."""
    steps = [(f"{s['fraction']:.0%} ({s['keys_per_second']:,.0f} keys/s)", s)
             for s in report["at_fraction"]]  # fmt: skip
    steps += [(f"{s['keys_per_second']:,.0f} keys/s", s) for s in report.get("at_rates", [])]
    lines = [
        "| rate | index (record → ack) | count (last ack → ready) | enrich (ready → enriched) "
        "| end to end |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, step in steps:
        hops = step.get("hops", {})
        cells = [_spread(hops.get(hop, {})) for hop in ("index", "count", "enrich")]
        end = _spread({k: step[f"latency_{k}"] for k in ("p50", "p95", "p99")})
        lines.append(f"| {label} | {' | '.join(cells)} | {end} |")
    return lines


def _spread(values: dict[str, Any]) -> str:
    if not values or values.get("p50") is None:
        return "-"
    return f"{values['p50']} / {values['p95']} / {values['p99']}"


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
    left.set_xlabel("seconds from a key's last source record to its enriched record")
    left.set_ylabel("fraction of keys")
    left.set_title("latency CDF")
    left.legend()
    search = sorted(report["search"], key=lambda s: s["keys_per_second"])
    rates = [s["keys_per_second"] for s in search]
    right.plot(rates, [s["latency_p50"] for s in search], marker="o", label="p50")
    right.plot(rates, [s["latency_p99"] for s in search], marker="o", label="p99")
    for s in search:
        if not s.get("kept_up", s["sustained"]):
            right.axvline(s["keys_per_second"], color="red", linestyle=":", linewidth=1)
    right.axhline(report.get("slo_seconds", 3.0), color="grey", linestyle="--", linewidth=1)
    right.set_xlabel("keys/s (red: not kept up; dashed: the p99 objective)")
    right.set_ylabel("latency s")
    right.set_title("latency along the search")
    right.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path, Path]:
    return write_files(out_dir, f"sustain-n{report['sources']}", report, markdown(report), chart)
