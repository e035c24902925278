from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import SERVER_LINES, UNCHECKED

INTEGRATION = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration/ needs real servers: ``-m "not integration"`` skips it."""
    for item in items:
        if INTEGRATION in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the real servers the tests ran against, and every guarantee left unchecked."""
    for line in SERVER_LINES:
        terminalreporter.write_line(line)
    if UNCHECKED:
        terminalreporter.write_sep("!", "GUARANTEES NOT CHECKED IN THIS RUN", red=True, bold=True)
        for guarantee, reason in UNCHECKED:
            terminalreporter.write_line(f"UNCHECKED: {guarantee}: {reason}", red=True, bold=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands its server lines and unchecked guarantees on."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["server_lines"] = list(SERVER_LINES)
        output["unchecked"] = [list(pair) for pair in UNCHECKED]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller gathers what each worker handed on, for the terminal summary."""
    output = getattr(node, "workeroutput", {})
    SERVER_LINES.extend(output.get("server_lines", []))
    UNCHECKED.extend((guarantee, reason) for guarantee, reason in output.get("unchecked", []))
