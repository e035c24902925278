"""The errors of the benchmarks.

Every class roots in :class:`fusion.core.errors.FusionError` and says its exit code.
"""

from __future__ import annotations

from pathlib import Path

from fusion.core import ExitCode, FusionError


class PipelineProcessError(FusionError):
    """The pipeline process the benchmark started stopped or did not start."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, what: str, log: Path) -> None:
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
        super().__init__(f"{what}; its output ends with: {tail}")


class SustainError(FusionError):
    """The sustained-load benchmark could not finish a step."""

    exit_code = ExitCode.QUERY_FAILED


class IdleError(FusionError):
    """The idle benchmark did not see the deadline it set fire."""

    exit_code = ExitCode.QUERY_FAILED
