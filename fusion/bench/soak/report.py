"""The soak's figures per window, whether each series stays flat, and its report (pure).

A series is **flat** when its least-squares trend over the windows after the
first moves it by at most ``FLAT_SHARE`` of its mean per hour, or by at most
its absolute floor per hour (a series near zero, as consumer lag is between
batches, has no share to speak of). The first window is left out: the JVM
compiles, the state fills up to its TTL, the caches warm.

Latency and lag are held to it over the *undisturbed* windows: in a window
with a kill or Elasticsearch's restart, the p99 is the time the pipeline took
to come back, not its steady latency. Memory and state are held to it over
every window while the input runs.

A key's latency counts in the window in which its enriched record was
written, as a latency histogram scraped every window would count it. Counted
by the window its last record was sent in, the keys in flight when the next
window's kill struck (sent in the last second or two of a quiet window,
enriched after the restart) land in the quiet window: that p99 is kept beside
(``sent_p99_seconds``), not held to flat. Keys enriched after the input
stopped have their own window, ``after_input``, held to nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fusion.observe import percentiles

FLAT_SHARE = 0.10  # of the series' mean, per hour
# Per hour, whatever the mean: what a series may drift and still count as flat.
FLOORS = {
    "latency_p99_seconds": 0.5,
    "pipeline_rss_mb": 50.0,
    "servers_rss_mb": 50.0,
    "state_keys": 1_000.0,
    "lag_records": 1_000.0,
}
SERIES = tuple(FLOORS)


@dataclass(frozen=True)
class Sample:
    """One reading of the running pipeline (seconds since the soak started)."""

    at: float
    pipeline_rss_mb: float
    servers_rss_mb: float
    state_keys: float
    lag_records: float


STEADY = ("latency_p99_seconds", "lag_records")  # held to flat over undisturbed windows


def windows(
    samples: Sequence[Sample],
    latencies: Sequence[tuple[float, float]],
    window: float,
    duration: float,
    disturbances: Sequence[float] = (),
) -> list[dict[str, float | None]]:
    """Per window: its start, the p99 latency of the keys enriched in it, the samples' means.

    ``latencies``: (when the key's last record was sent, its latency), both in
    seconds; ``disturbances``: when (seconds) a kill or a restart happened.
    """
    # The input's windows, and on to the one that holds the last key enriched.
    last = max((sent + lat for sent, lat in latencies), default=0.0)
    count = max(1, math.ceil(duration / window), int(last // window) + 1)
    out: list[dict[str, float | None]] = []
    for n in range(count):
        start, end = n * window, (n + 1) * window
        taken = sorted(lat for sent, lat in latencies if start <= sent + lat < end)
        sent_in = sorted(lat for sent, lat in latencies if start <= sent < end)
        inside = [s for s in samples if start <= s.at < end]
        row: dict[str, float | None] = {"start_minute": start / 60, "keys": float(len(taken))}
        row["disturbed"] = float(any(start <= at < end for at in disturbances))
        row["after_input"] = float(start >= duration)
        row["latency_p99_seconds"] = percentiles(taken)["p99"]
        row["sent_p99_seconds"] = percentiles(sent_in)["p99"]
        for name in SERIES[1:]:
            values = [float(getattr(s, name)) for s in inside]
            row[name] = sum(values) / len(values) if values else None
        out.append(row)
    return out


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of (minute, value) points, per hour."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return 0.0
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return slope * 60


def flatness(rows: Sequence[Mapping[str, float | None]]) -> dict[str, dict[str, Any]]:
    """Each series after the first window: its mean, slope per hour, bound and verdict."""
    verdicts: dict[str, dict[str, Any]] = {}
    for name in SERIES:
        points = [
            (float(row["start_minute"] or 0.0), float(value))
            for row in rows[1:]
            if (value := row.get(name)) is not None
            and not row.get("after_input")
            and not (name in STEADY and row.get("disturbed"))
        ]
        mean = sum(y for _, y in points) / len(points) if points else 0.0
        slope = slope_per_hour(points)
        bound = max(FLAT_SHARE * abs(mean), FLOORS[name])
        verdicts[name] = {
            "mean": round(mean, 3),
            "slope_per_hour": round(slope, 3),
            "bound_per_hour": round(bound, 3),
            "flat": abs(slope) <= bound,
        }
    return verdicts


def markdown(report: Mapping[str, Any]) -> str:
    """The soak's report: what ran, the verdicts, then each window."""
    o = report["options"]
    lines = [
        f"# Soak: {o['minutes']:g} min at {report['rate']:,.0f} keys/s x {o['sources']} sources",
        "",
        f"Commit `{report['commit']}`, {report['date']}; {report['machine'].get('cores')} cores.",
        f"Rate: {report['rate_reason']}. `state_ttl` {o['state_ttl']}; a kill -9 of the "
        f"whole `fusion run` every {o['kill_every_minutes']:g} min "
        f"({len(report['kills'])} kills); Elasticsearch restarted: {report['es_restart']}.",
        "",
        f"- keys sent {report['keys_sent']:,}{_achieved(report)}, "
        f"enriched {report['keys_enriched']:,}, "
        f"**lost {report['keys_lost']:,}**, **fired twice {report['duplicate_fires']:,}**",
        f"- lost keys reported incomplete: {_reasons(report.get('lost_reported_incomplete'))}",
        f"- drained {report['drain_seconds']:.0f} s after the last record",
        "",
        f"Flat: the least-squares trend after the first window within "
        f"{FLAT_SHARE:.0%} of the mean per hour, or the floor per hour; latency and lag over "
        "the windows without a kill or a restart (marked *), memory and state over all.",
        "",
        "| series | mean | slope per hour | bound per hour | flat |",
        "|---|---:|---:|---:|---|",
    ]
    for name, v in report["flatness"].items():
        lines.append(
            f"| {name} | {v['mean']:,.2f} | {v['slope_per_hour']:,.2f} | "
            f"{v['bound_per_hour']:,.2f} | {'yes' if v['flat'] else '**no**'} |"
        )
    lines += [
        "",
        "Keys and p99 by the window their enriched record was written in; beside it the p99 "
        "of the keys *sent* in the window (not held to flat: a quiet window's last keys can "
        "meet the next window's kill). +: after the input stopped, held to nothing.",
        "",
        "| window (min) | keys | p99 (s) | pipeline MB | servers MB | state keys | lag "
        "| p99 by send (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report["windows"]:
        cells = [_cell(row.get(name)) for name in (*SERIES, "sent_p99_seconds")]
        start = f"{row['start_minute']:g}" + ("*" if row.get("disturbed") else "")
        start += "+" if row.get("after_input") else ""
        lines.append(f"| {start} | {row['keys']:,.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def write_report(report: Mapping[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"soak-{report['options']['minutes']:g}min-n{report['options']['sources']}"
    json_path, md_path = stem.with_suffix(".json"), stem.with_suffix(".md")
    json_path.write_text(json.dumps(report, indent=2))
    md_path.write_text(markdown(report))
    return json_path, md_path


def _reasons(counts: Mapping[str, int] | None) -> str:
    """``state_ttl`` 3, ``timeout`` 1; or none."""
    if not counts:
        return "none"
    return ", ".join(f"`{reason}` {n:,}" for reason, n in sorted(counts.items()))


def _achieved(report: Mapping[str, Any]) -> str:
    """Say " (at 799 keys/s)"; nothing for a report from before the figure was kept."""
    rate = report.get("keys_per_second_sent")
    return "" if rate is None else f" (at {rate:,.0f} keys/s)"
