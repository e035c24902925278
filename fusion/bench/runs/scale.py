"""`fusion bench scale`: the burst benchmark over K = 1k/14k/100k keys and N = 2/4/8 sources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fusion.bench import MODES, BenchOptions, mode_result
from fusion.bench.runs.burst import run_bench
from fusion.core import Settings

# (keys, sources) points of the scaling curve: K grows at N = 4, N grows at K = 14,000.
SCALE_POINTS = ((1_000, 4), (14_000, 4), (100_000, 4), (14_000, 2), (14_000, 8))


# Naive mode sends K·N·(N-1) single GETs; above this many it is left out of a point.
NAIVE_BUDGET = 500_000


def run_scale(
    settings: Settings,
    points: tuple[tuple[int, int], ...] = SCALE_POINTS,
    on_step: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    reports = []
    for keys, sources in points:
        modes = tuple(
            m for m in MODES if m != "naive" or keys * sources * (sources - 1) <= NAIVE_BUDGET
        )
        prefix = f"K={keys:,} N={sources}: "
        report = run_bench(
            settings,
            BenchOptions(keys, sources, modes),
            # Called only while this point runs, so the loop variable cannot move on under it.
            on_step=lambda step: on_step(prefix + step),  # noqa: B023
        )
        reports.append(report)
    return reports


def scale_chart(reports: list[dict[str, Any]], path: Path) -> None:
    """Requests per key and wall time against K (N = 4) and against N (K = 14,000)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    series = [
        ("keys", [r for r in reports if r["sources"] == 4], "K (N = 4)"),
        ("sources", [r for r in reports if r["keys"] == 14_000], "N (K = 14,000)"),
    ]
    for column, (axis, points, label) in enumerate(series):
        points = sorted(points, key=lambda r: r[axis])
        for mode in MODES:
            runs = [(r[axis], m) for r in points if (m := mode_result(r, mode)) is not None]
            xs = [x for x, _ in runs]
            per_key = [m["requests_per_key"] for _, m in runs]
            wall = [m["wall_seconds"] for _, m in runs]
            axes[0][column].plot(xs, per_key, marker="o", label=mode)
            axes[1][column].plot(xs, wall, marker="o", label=mode)
        floors = [r["floor_seconds"] for r in points]
        axes[1][column].plot([r[axis] for r in points], floors, "k--", label="floor")
        axes[0][column].set_title(f"ES requests per key vs {label}")
        axes[1][column].set_title(f"wall time (s) vs {label}")
        axes[0][column].set_yscale("log")  # every mode sends > 0 requests per key
        if axis == "keys":
            axes[0][column].set_xscale("log")
            axes[1][column].set_xscale("log")
        for row in (0, 1):
            axes[row][column].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
