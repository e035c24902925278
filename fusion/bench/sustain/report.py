"""The sustained-load benchmark's report: its Markdown table and chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusion.bench import PART_NAMES, set_lines, write_files
from fusion.bench.sustain.floor import median_of_runs, share


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
        *set_lines(report.get("pipeline_set") or {}),
    ]
    floor = report.get("floor")
    if floor is not None:
        lines += [
            f"The floor (this machine bulk-indexing each key's {report['sources'] + 1} documents "
            f"from Python, {floor['keys']:,} keys{_beside(floor)}): "
            f"{floor['keys_per_second']:,.0f} keys/s "
            f"({floor['keys_per_second_before']:,.0f} before the pipeline, "
            f"{floor['keys_per_second_after']:,.0f} after). Rates below are also fractions of it.",
            "",
        ]
    if best is None:
        lines.append(f"No rate was sustained with p99 <= {slo:g} s.")
    else:
        lines.append(
            f"**Highest sustained rate (p99 <= {slo:g} s): {_share(best)}"
            f"{best['keys_per_second']:,.0f} keys/s** "
            f"({best['keys_per_second'] * report['sources']:,.0f} records/s)"
        )
    if kept is not None:
        lines.append("")
        lines.append(
            f"Highest rate kept up with, whatever the latency: {_share(kept)}"
            f"{kept['keys_per_second']:,.0f} keys/s (p50 {kept['latency_p50']} s, "
            f"p99 {kept['latency_p99']} s)"
        )
    lines += ["", *hops_table(report), "", *stages_table(report), ""]
    lines += cores_table(report)
    lines += [
        "| step | keys/s asked | sent | keys | p50 s | p95 s | p99 s | max s | lookups/key "
        "| backlog (mean, rise) | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, s in _steps(report):
        lines.append(
            f"| {label} | {_share(s)}{s['keys_per_second']:,.0f} "
            f"| {s['sent_keys_per_second']:,.0f} "
            f"| {s['keys']:,} | {s['latency_p50']} | {s['latency_p95']} | {s['latency_p99']} "
            f"| {s['latency_max']} | {s['requests_per_key']} "
            f"| {s['backlog_mean']:,}, {s['backlog_rise']:+,} | {s['why']} |"
        )
    return "\n".join(lines) + "\n"


def _steps(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every step of a run, labelled as the step table shows them: the search's, then
    the fractions of the highest rate, then the fixed rates."""
    rows = [("search", s) for s in report["search"]]
    rows += [(f"{s['fraction']:.0%}", s) for s in report["at_fraction"] if s["fraction"] < 1]
    return rows + [(_fixed(s), s) for s in report.get("at_rates", [])]


def _beside(floor: dict[str, Any]) -> str:
    """How the floor shared the machine: beside the load generator (at the floor's own rate)."""
    return ", beside the load generator at its rate" if floor.get("beside_generator") else ""


def cores_table(report: dict[str, Any]) -> list[str]:
    """Cores each process kept busy while each step's records were sent, and the machine's
    (all of it: what no column names is the rest); nothing for a report without them."""
    steps = [(label, s) for label, s in _steps(report) if s.get("cores")]
    if not steps:
        return []
    seen = {k for _, s in steps for k in s["cores"]} - {"machine"}
    columns = [k for k in PART_NAMES if k in seen] + sorted(seen - set(PART_NAMES))
    names = [PART_NAMES.get(k) or k for k in columns]
    cores = report["machine"]["cores"]
    lines = [
        f"Cores busy while each step's records were sent, by process (of {cores}):",
        "",
        f"| step | keys/s | {' | '.join(names)} | machine |",
        "|---|---:|" + "---:|" * (len(columns) + 1),
    ]
    for label, s in steps:
        cells = [str(s["cores"].get(k, "-")) for k in [*columns, "machine"]]
        lines.append(f"| {label} | {s['keys_per_second']:,.0f} | {' | '.join(cells)} |")
    return [*lines, ""]


def hops_table(report: dict[str, Any]) -> list[str]:
    """Latency per hop (p50/p95/p99 s) at each reported rate, from the records' Kafka timestamps."""
    steps = [(f"{s['fraction']:.0%} ({s['keys_per_second']:,.0f} keys/s)", s)
             for s in report["at_fraction"]]  # fmt: skip
    steps += [(f"{_fixed(s)}: {s['keys_per_second']:,.0f} keys/s", s)
              for s in report.get("at_rates", [])]  # fmt: skip
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


def _share(step: dict[str, Any]) -> str:
    """A rate's fraction of the floor, as the report's figures open with it."""
    part = step.get("fraction_of_floor")
    return "" if part is None else f"{part:.2f} of the floor, "


def _fixed(step: dict[str, Any]) -> str:
    part = step.get("floor_fraction")
    return "fixed" if part is None else f"{share(part)} of the floor"


def of_runs(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs' reports, with the median of their headline figures."""
    return {"kind": "sustain-runs", "median": median_of_runs(reports), "runs": reports}


def runs_markdown(report: dict[str, Any]) -> str:
    """The runs side by side (each beside its own floor), their median, then each run."""
    m = report["median"]
    at = "-" if m["floor_step_fraction"] is None else share(m["floor_step_fraction"])
    lines = [
        f"Sustained load, {m['runs']} runs, each from a fresh pipeline and "
        "beside the floor measured in the same run (fractions of it first).",
        "",
        "| run | floor keys/s (before, after) | sustained (p99 objective) | kept up "
        f"| p50 / p99 s at {at} of the floor |",
        "|---|---:|---:|---:|---:|",
    ]
    for n, run in enumerate(report["runs"], 1):
        floor = run["floor"]
        step = next((s for s in run.get("at_rates", []) if s.get("floor_fraction")), None)
        lines.append(
            f"| {n} | {floor['keys_per_second']:,.0f} ({floor['keys_per_second_before']:,.0f}, "
            f"{floor['keys_per_second_after']:,.0f}) | {_headline(run.get('sustained'))} "
            f"| {_headline(run.get('kept_up'))} "
            f"| {_latency(step)} |"
        )
    lines.append(
        f"| median | {m['floor_keys_per_second'] or 0:,.0f} "
        f"| {m['sustained_fraction']} ({m['sustained_keys_per_second'] or 0:,.0f} keys/s) "
        f"| {m['kept_up_fraction']} ({m['kept_up_keys_per_second'] or 0:,.0f} keys/s) "
        f"| {m['floor_step_p50']} / {m['floor_step_p99']} |"
    )
    for n, run in enumerate(report["runs"], 1):
        lines += ["", f"## Run {n}", "", markdown(run)]
    return "\n".join(lines) + "\n"


def _headline(step: dict[str, Any] | None) -> str:
    if step is None:
        return "none"
    return f"{step['fraction_of_floor']} ({step['keys_per_second']:,.0f} keys/s)"


def _latency(step: dict[str, Any] | None) -> str:
    return "-" if step is None else f"{step['latency_p50']} / {step['latency_p99']}"


STAGE_COLUMNS = ("index.parse", "index.write", "enrich.lookup", "enrich.build", "enrich.write")


def stages_table(report: dict[str, Any]) -> list[str]:
    """Where a batch's time goes: each task stage's ms per batch at each reported rate
    (summed over the batch's tasks, which run side by side), then Spark's own phases."""
    steps = [(f"{s['fraction']:.0%} of the highest", s) for s in report["at_fraction"]]
    steps += [(_fixed(s), s) for s in report.get("at_rates", [])]
    lines = [
        "Where a batch's time goes, ms per batch (task stages summed over the batch's tasks):",
        "",
        f"| rate | {' | '.join(STAGE_COLUMNS)} |",
        "|---|" + "---:|" * len(STAGE_COLUMNS),
    ]
    for label, step in steps:
        stages = step.get("stages") or {}
        cells = [str(stages.get(name, "-")) for name in STAGE_COLUMNS]
        lines.append(f"| {label}, {step['keys_per_second']:,.0f} keys/s | {' | '.join(cells)} |")
    for query, phases in (report.get("spark_phases") or {}).items():
        spent = ", ".join(f"{k} {v}" for k, v in phases.items() if k != "batches")
        lines += ["", f"Spark's phases of the `{query}` query's {phases['batches']:,.0f} "
                  f"batches that read rows, ms per batch, the whole run: {spent}"]  # fmt: skip
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


def write_report(
    report: dict[str, Any], out_dir: Path, run: int | None = None
) -> tuple[Path, Path, Path]:
    """``<stamp>-sustain-n<N>[-run<run>].{json,md,png}`` (runs of one command share a stamp)."""
    name = f"sustain-n{report['sources']}" + ("" if run is None else f"-run{run}")
    return write_files(out_dir, name, report, markdown(report), chart)
