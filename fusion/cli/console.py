"""Where the command line writes: its two consoles, and what every command prints alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from fusion.core import ConfigError, PipelineConfig, Settings

# Lines are never wrapped nor cut: a log file or CI output keeps each message on one line.
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
for _console in (err, out):
    if not _console.is_terminal:
        _console.width = 1_000  # the status line's last frame is cut at the width


def pipeline_of(settings: Settings) -> PipelineConfig:
    if not isinstance(settings, PipelineConfig):
        raise ConfigError(
            "--config", "", "this command needs a pipeline file with [pipeline] and [[sources]] "
            "tables, e.g. --config examples/healthcare.toml"
        )  # fmt: skip
    return settings


def print_report(
    report: dict[str, Any], render: Callable[[dict[str, Any]], str], as_json: bool
) -> int:
    if as_json:
        out.print_json(json.dumps(report))
    else:
        out.print(escape(render(report)), soft_wrap=True)
    return 0
