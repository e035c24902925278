from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import SERVER_LINES, UNCHECKED

INTEGRATION = Path(__file__).parent / "integration"
# The files that take longest (seconds of one worker, `make test PYTEST_ARGS=--durations=0`),
# longest first. pytest-xdist hands files out in collection order (`make test` turns its
# reordering by test count off), so these start first and the short ones fill in after
# them: a long file handed out last would leave the other worker idle for minutes.
LONGEST = (
    "test_crash_matrix.py",  # 468 s
    "test_lost_checkpoint.py",  # 407 s
    "test_secured.py",  # 317 s
    "test_reconcile.py",  # 301 s
    "test_dimensions_oracle.py",  # 221 s
    "test_bench_smoke.py",  # 220 s
    "test_processes.py",  # 208 s
    "test_outages.py",  # 190 s
    "test_deletes.py",  # 176 s
    "test_counter_engines.py",  # 144 s
    "test_deployment.py",  # 143 s
    "test_children_oracle.py",  # 132 s
    "test_dimensions_lost.py",  # 131 s
    "test_cdc_oracle.py",  # 128 s
    "test_spark_cluster.py",  # 128 s
    "test_bench_soak.py",  # 107 s
    "test_bench_sustain.py",  # 92 s
    "test_without_a_jdk.py",  # 85 s
    "test_infra_cli.py",  # 77 s
    "test_keys_never_complete.py",  # 74 s
    "test_children.py",  # 73 s
    "test_dimensions.py",  # 71 s
    "test_lifecycle.py",  # 61 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration/ needs real servers: ``-m "not integration"`` skips it.

    The longest files come first, then the other integration tests, then the unit tests.
    """
    for item in items:
        if INTEGRATION in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)
    items.sort(key=_start_order)  # stable: a file's tests keep their order


def _start_order(item: pytest.Item) -> tuple[int, int]:
    path = Path(str(item.path))
    if path.name in LONGEST and INTEGRATION in path.parents:
        return 0, LONGEST.index(path.name)
    return (1 if INTEGRATION in path.parents else 2), 0


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
