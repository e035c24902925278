"""Progress of long commands: a bar on a terminal, plain periodic lines elsewhere."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.live import Live

from fusion.cli.terminal import Tracker


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=terminal, width=120), buffer


def test_without_a_terminal_it_prints_plain_lines_with_counts_and_a_rate() -> None:
    console, buffer = _console(terminal=False)

    with Tracker(console, "producing", "records", total=300, every=0) as tracker:
        for done in (100, 200, 300):
            tracker.update(done)

    lines = buffer.getvalue().splitlines()
    assert lines[0].startswith("producing: 100 of 300 records")
    assert lines[-1].startswith("producing: 300 of 300 records")
    assert len(lines) == 3  # the last update said the end already: no second line for it
    assert "\x1b[" not in buffer.getvalue()  # no terminal control codes in a log file


def test_without_a_terminal_it_stays_quiet_between_lines() -> None:
    console, buffer = _console(terminal=False)

    with Tracker(console, "scanning", "keys", every=3600) as tracker:
        for done in range(1, 1000):
            tracker.update(done)
        tracker.update(1000, total=50, description="enriching")  # a new phase: said at once
        tracker.update(1500)  # quiet, until the end says it

    lines = buffer.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["scanning", "enriching", "enriching"]
    assert lines[1].startswith("enriching: 1,000 of 50 keys")
    assert lines[2].startswith("enriching: 1,500 of 50 keys")


def test_steps_count_the_ones_begun_before() -> None:
    console, buffer = _console(terminal=False)

    with Tracker(console, "benchmark", "steps", total=3, rate=False, every=0) as tracker:
        for step in ("floor", "batched mode", "the counter alone"):
            tracker.step(step)

    lines = buffer.getvalue().splitlines()
    assert lines[:3] == [
        "floor: 0 of 3 steps",
        "batched mode: 1 of 3 steps",
        "the counter alone: 2 of 3 steps",
    ]


def test_on_a_terminal_it_draws_a_bar_and_leaves_no_line_behind() -> None:
    console, buffer = _console(terminal=True)

    with Tracker(console, "producing", "records", total=10) as tracker:
        tracker.update(5)

    assert "5 of 10 records" in buffer.getvalue()  # drawn while running...
    assert buffer.getvalue().endswith("\x1b[1A\x1b[2K")  # ...and erased at the end (transient)


def test_fusion_never_cuts_a_status_line_written_to_a_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from fusion.cli import main as cli

    line = "indexed 1,000,000  " * 12  # longer than any terminal's default width

    with Live(console=cli.err, refresh_per_second=2) as live:
        live.update(line)

    assert line.rstrip() in capsys.readouterr().err
