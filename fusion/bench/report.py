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
