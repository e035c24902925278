"""The pieces every command's help is made of: shared options, a formatter, examples."""

from __future__ import annotations

import argparse
from pathlib import Path

PIPELINE = "--config examples/healthcare.toml"


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks; shows defaults only where the help says them."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=100)


def examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def common_options() -> argparse.ArgumentParser:
    """Options every command takes, before or after its name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="settings or pipeline TOML file (default: built-in settings plus FUSION_* "
        "environment variables)",
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="also show Spark's warnings on the terminal (they always go to its log file)",
    )
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log Fusion's and its clients' debug lines, and show tracebacks with errors",
    )
    return common


class Commands:
    """Adds subcommands that share the common options, a help line and examples."""

    def __init__(self, parent: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
        self.group = parent.add_subparsers(required=True, metavar="COMMAND", title="commands")
        self.common = common
        self.prefix = "" if parent.prog == "fusion" else parent.prog.removeprefix("fusion ") + " "

    def add(self, name: str, help: str, *lines: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = self.group.add_parser(
            name,
            help=help,
            description=help[0].upper() + help[1:] + ".",
            epilog=examples(*lines),
            parents=[self.common],
            formatter_class=Formatter,
        )
        sub.set_defaults(command=self.prefix + name)
        return sub
