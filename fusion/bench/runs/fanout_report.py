"""The fan-out benchmark's figures across runs, and its report (pure)."""

from __future__ import annotations

from typing import Any

from fusion.bench import lower_median


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of the median time (the lower middle), with every run's rate."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    alone = [r["items_per_second_alone"] for r in runs if "items_per_second_alone" in r]
    warm = [r["warm"] for r in runs if "warm" in r]
    # Reports from before the warm rename beside a wave was timed have none.
    during = [w["items_per_second_during"] for w in warm if "items_per_second_during" in w]
    return ordered[(len(ordered) - 1) // 2] | {
        "rates": [r["items_per_second"] for r in runs],
        "rates_alone": alone,
        "median_alone": lower_median(alone),
        "rates_warm": [w["items_per_second"] for w in warm],
        "rates_warm_during": during,
        "median_warm_during": lower_median(during),
        "median_warm": lower_median([w["items_per_second"] for w in warm]),
        "fractions_warm": [w["new_keys_fraction_during"] for w in warm],
        "median_fraction_warm": lower_median([w["new_keys_fraction_during"] for w in warm]),
        "floors": [r["floor_items_per_second"] for r in runs],
    }


def markdown(report: dict[str, Any]) -> str:
    renamed = (
        "A company renamed, every item of the 100 brands naming it enriched again, up the chain"
        if report.get("chain")
        else "A brand renamed, every item naming it enriched again"
    )
    lines = [
        f"{renamed} (`fanout_page` "
        f"{report['page']:,}); {report['machine']['cores']} cores; commit {report['commit']}, "
        f"{report['date']}. Median of {report['runs']} runs, each beside its own floor (the "
        "items' enriched documents bulk-written from Python):",
        "",
        "| items | renamed row's record → last item enriched (s) | items/s (each run) "
        "| floor items/s | fraction of the floor | ES requests per item "
        "| new keys/s alone → during the fan-out (fraction) | renamed alone: items/s (each run) |",
        "|---:|---:|---|---:|---:|---:|---|---|",
    ]
    for size, found in report["sizes"].items():
        m = found["median"]
        each = ", ".join(f"{r:,.0f}" for r in m["rates"])
        lines.append(
            f"| {int(size):,} | {m['seconds']:.1f} | {m['items_per_second']:,.0f} ({each}) | "
            f"{m['floor_items_per_second']:,} | {m['fraction_of_floor']:.2f} | "
            f"{m['es_requests_per_item']:.4f} | {m['new_keys_per_second_alone']:,.0f} → "
            f"{m['new_keys_per_second_during']:,.0f} ({m['new_keys_fraction_during']:.2f}) | "
            f"{_alone(m)} |"
        )
    lines += _warm(report)
    lines += _cores(report)
    return "\n".join(lines) + "\n"


def _warm(report: dict[str, Any]) -> list[str]:
    """The rename in a warmed-up JVM (fusion.bench.runs.fanout_steps.warmed), if timed."""
    rows = []
    for size, found in report["sizes"].items():
        m = found["median"]
        if m.get("median_warm") is None:
            continue
        each = ", ".join(f"{r:,.0f}" for r in m["rates_warm"])
        fractions = ", ".join(f"{f:.2f}" for f in m["fractions_warm"])
        floor = lower_median(m["floors"]) or 1
        rows.append(
            f"| {int(size):,} | {_during(m, floor)} "
            f"| {m['median_warm']:,.0f} ({each}) | {m['median_warm'] / floor:.2f} "
            f"| {m['median_fraction_warm']:.2f} ({fractions}) |"
        )
    if not rows:
        return []
    warm = report.get("warm", {})
    head = [
        "",
        f"Warmed up (after untimed renames of at least {warm.get('seconds', 30):.0f} s; the "
        f"median of {warm.get('renames', 3)} renames alone per run, then the median of the "
        "runs, beside the median floor):",
        "",
        "| items | renamed beside a wave, warm: items/s (each run) | fraction of the floor "
        "| renamed alone, warm: items/s (each run) | fraction of the floor "
        "| new keys during / alone, warm (each run) |",
        "|---:|---|---:|---|---:|---|",
    ]
    return head + rows


def _alone(median: dict[str, Any]) -> str:
    """The second rename, alone: its median and each run's items/s; - before it was timed."""
    if median.get("median_alone") is None:
        return "-"
    each = ", ".join(f"{r:,.0f}" for r in median["rates_alone"])
    return f"{median['median_alone']:,.0f} ({each})"


def _during(median: dict[str, Any], floor: float) -> str:
    """The warm rename beside a wave: its median, each run's, its fraction; - if not timed."""
    if median.get("median_warm_during") is None:
        return "- | -"
    each = ", ".join(f"{r:,.0f}" for r in median["rates_warm_during"])
    rate = median["median_warm_during"]
    return f"{rate:,.0f} ({each}) | {rate / floor:.2f}"


def _cores(report: dict[str, Any]) -> list[str]:
    """Where the cores went in the rename alone of each size's median run, a line each."""
    out = []
    for size, found in report["sizes"].items():
        cores = found["median"].get("cores_alone")
        if cores:
            parts = ", ".join(f"{name} {value:.2f}" for name, value in cores.items())
            out.append(f"- {int(size):,} items, the rename alone, cores busy: {parts}")
    return ["", *out] if out else []
