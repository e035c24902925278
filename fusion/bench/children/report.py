"""The children benchmark's report, each figure beside its target (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusion.bench import PART_NAMES


def median_run(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs (the lower middle one), and each run's."""

    def middle(path: tuple[str, ...]) -> Any:
        values = sorted(_at(run, path) for run in runs)
        return values[(len(values) - 1) // 2]

    figures = {
        "floor_seconds": ("floor_seconds",),
        "floor_orders_per_second": ("floor_orders_per_second",),
        "burst_seconds": ("burst", "seconds"),
        "burst_ratio_to_floor": ("burst", "ratio_to_floor"),
        "burst_orders_per_second": ("burst", "orders_per_second"),
        "burst_lookups_per_order": ("burst", "lookups_per_order"),
        "big_seconds": ("big", "seconds"),
        "big_reenrichments": ("big", "reenrichments"),
        "steady_rate": ("steady", "rate"),
        "steady_p50": ("steady", "latency_p50"),
        "steady_p99": ("steady", "latency_p99"),
        "steady_lookups_per_order": ("steady", "lookups_per_order"),
    }
    return {name: middle(path) for name, path in figures.items()} | {
        "each": {name: [_at(run, path) for run in runs] for name, path in figures.items()}
    }


def _at(run: dict[str, Any], path: tuple[str, ...]) -> Any:
    found: Any = run
    for part in path:
        found = found[part]
    return found


# docs/children.md's targets on a machine of this kind.
BURST_RATIO = 3.0  # the burst within 3x its floor
LOOKUPS_PER_ORDER = 0.05  # in a burst
STEADY_P99 = 3.0  # seconds, at a tenth of the floor


def markdown(report: dict[str, Any]) -> str:
    m, options = report["median"], report["options"]
    each = m["each"]

    def runs(name: str, fmt: str) -> str:
        return ", ".join(format(value, fmt) for value in each[name])

    def held(ok: bool) -> str:
        return "met" if ok else "**missed**"

    lines = [
        f"Orders with their lines (a children source); {report['machine']['cores']} cores; "
        f"commit {report['commit']}, {report['date']}. Median of {len(report['runs'])} runs "
        "(each run's in brackets), each beside its own floor: the same source documents and "
        "the orders' enriched documents, arrays included, bulk-written from Python.",
        "",
        "| figure | median (each run) | floor | target |",
        "|---|---|---:|---|",
        f"| burst of {options['orders']:,} orders x {options['lines']} lines: seconds | "
        f"{m['burst_seconds']:.1f} ({runs('burst_seconds', '.1f')}) | {m['floor_seconds']:.1f} "
        f"| |",
        f"| burst: ratio to the floor | {m['burst_ratio_to_floor']:.2f} "
        f"({runs('burst_ratio_to_floor', '.2f')}) | 1 | ≤ {BURST_RATIO:g}: "
        f"{held(m['burst_ratio_to_floor'] <= BURST_RATIO)} |",
        f"| burst: orders enriched per second | {m['burst_orders_per_second']:,.0f} "
        f"({runs('burst_orders_per_second', ',.0f')}) | {m['floor_orders_per_second']:,.0f} | |",
        f"| burst: Elasticsearch lookups per order | {m['burst_lookups_per_order']:.4f} "
        f"({runs('burst_lookups_per_order', '.4f')}) | | ≤ {LOOKUPS_PER_ORDER:g}: "
        f"{held(m['burst_lookups_per_order'] <= LOOKUPS_PER_ORDER)} |",
        f"| one order's {options['big']:,} lines changed at once: seconds to its document | "
        f"{m['big_seconds']:.2f} ({runs('big_seconds', '.2f')}) | | |",
        f"| ... re-enrichments it took | {m['big_reenrichments']} "
        f"({runs('big_reenrichments', 'd')}) | | |",
        f"| {options['steady']:,} lines each changed once at a tenth of the floor: lines/s | "
        f"{m['steady_rate']:,.1f} ({runs('steady_rate', ',.1f')}) | | |",
        f"| ... latency p50, line sent → its order's document (s) | {m['steady_p50']:.2f} "
        f"({runs('steady_p50', '.2f')}) | | |",
        f"| ... latency p99 (s) | {m['steady_p99']:.2f} ({runs('steady_p99', '.2f')}) | | "
        f"≤ {STEADY_P99:g}: {held(m['steady_p99'] <= STEADY_P99)} |",
    ]
    return "\n".join([*lines, *_where_time_goes(report)]) + "\n"


def _where_time_goes(report: dict[str, Any]) -> list[str]:
    """Cores busy per process during each run's burst and steady changes, and the burst's
    task time per stage: what limits the figures above (nothing for a report without them)."""
    runs = [run for run in report["runs"] if run["burst"].get("cores")]
    if not runs:
        return []
    seen = {k for run in runs for step in ("burst", "steady") for k in run[step]["cores"]}
    columns = [k for k in PART_NAMES if k in seen] + sorted(seen - set(PART_NAMES) - {"machine"})
    lines = [
        "",
        f"Cores busy by process (of {report['machine']['cores']}), from the first record sent "
        "to the last document enriched:",
        "",
        f"| run, step | {' | '.join(PART_NAMES.get(k) or k for k in columns)} | machine |",
        "|---|" + "---:|" * (len(columns) + 1),
    ]
    for number, run in enumerate(runs, 1):
        for step in ("burst", "steady"):
            cores = run[step]["cores"]
            cells = [str(cores.get(k, "-")) for k in [*columns, "machine"]]
            lines.append(f"| {number}, {step} | {' | '.join(cells)} |")
    stages = [run["burst"].get("task_stages", {}) for run in runs]
    names = sorted({name for found in stages for name, seconds in found.items() if seconds})
    if names:
        lines += [
            "",
            "The burst's task time by stage, seconds summed over tasks (each run):",
            "",
            "| stage | " + " | ".join(f"run {n}" for n in range(1, len(runs) + 1)) + " |",
            "|---|" + "---:|" * len(runs),
        ]
        for name in names:
            cells = [f"{found.get(name, 0):.1f}" for found in stages]
            lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines
