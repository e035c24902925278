"""The error of bytes that are not an ack.

Every class roots in :class:`fusion.core.errors.FusionError` and says its exit code.
"""

from __future__ import annotations

from fusion.core import ExitCode, FusionError


class AckError(FusionError):
    """Bytes that are not a valid ack event."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"invalid ack: {problem}")
