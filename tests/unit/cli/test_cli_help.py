"""Help that teaches: every option has a help line, every command examples, plain text."""

from __future__ import annotations

import argparse

import pytest

from fusion.cli import main as cli
from fusion.cli import parser as cli_parser

PARSER = cli_parser.build()
COMMANDS = cli_parser.subcommands(PARSER)


def test_every_command_has_a_handler_or_subcommands() -> None:
    leaves = {name for name in COMMANDS if not any(o.startswith(name + " ") for o in COMMANDS)}
    assert leaves == set(cli.HANDLERS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_every_command_has_a_help_line(name: str) -> None:
    for action in COMMANDS[name]._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        assert action.help and len(action.help) > 8, (name, action.option_strings or action.dest)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_ends_its_help_with_examples(name: str) -> None:
    text = COMMANDS[name].format_help()
    examples = text.split("examples:\n", 1)
    assert len(examples) == 2, f"`fusion {name} --help` has no examples"
    lines = [line for line in examples[1].splitlines() if line.strip()]
    assert 1 <= len(lines) <= 4
    runnable = ("fusion ", "spark-submit ")
    assert all(line.strip().startswith(runnable) for line in lines), lines
    assert examples[1].rstrip().endswith(lines[-1].strip())


def test_the_top_level_help_is_plain_text_with_first_steps() -> None:
    text = PARSER.format_help()
    assert "``" not in text and ":mod:" not in text and ":func:" not in text
    assert "fusion demo" in text and "fusion infra up" in text
    for name in ("infra", "run", "demo", "status", "explain", "reconcile", "bench"):
        assert f"\n    {name} " in text
    assert "Exit codes: 0 ok" in text


def test_the_documented_examples_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """Each example line is a command this parser accepts (the pipeline file is not read)."""
    for name, parser in COMMANDS.items():
        assert parser.epilog is not None
        for line in parser.epilog.splitlines()[1:]:
            words = line.split("#")[0].split("&&")[0].split()
            if words[0] != "fusion":
                continue
            parsed = PARSER.parse_args(words[1:])
            assert parsed.command.startswith(name.split()[0]), line
