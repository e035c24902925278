from __future__ import annotations

import pytest

from tests.integration.conftest import SERVER_LINES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the real servers the integration tests ran against, at the end of the log."""
    for line in SERVER_LINES:
        terminalreporter.write_line(line)
