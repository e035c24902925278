"""What ``fusion`` accepts: every command, option, help line and example.

Pure declaration: each command sets ``command`` (e.g. ``"infra up"``) and
:mod:`fusion.cli.main` runs the matching handler. A unit test holds every option
to a help line and every command to its examples.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fusion.cli.bench_options import add_bench
from fusion.cli.help import PIPELINE, Commands, Formatter, common_options
from fusion.cli.infra_options import add_infra

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


def build() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="fusion", description=DESCRIPTION, parents=[common], formatter_class=Formatter
    )
    commands = Commands(parser, common)
    add_infra(commands.add(
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
    add_bench(commands.add(
        "bench",
        "measure Fusion against the floor of this machine: each benchmark its own command, "
        "with its report under --out",
        "fusion bench burst --keys 14000 --sources 4",
        "fusion bench sustain --runs 3",
        "fusion bench soak --minutes 60",
    ), common)  # fmt: skip
    demo = commands.add(
        "demo",
        "start the local runtime and run the healthcare demo (14,000 keys x 4 sources)",
        "fusion demo",
        "fusion demo --keys 1000 --reset",
        "fusion demo --cdc   # a shop's PostgreSQL tables through Debezium: docs/cdc.md",
    )
    demo.add_argument("--keys", type=int, default=14_000, help="join keys to generate (14,000)")
    demo.add_argument(
        "--reset",
        action="store_true",
        help="delete the demo pipeline's topics, indexes and checkpoints first, even if "
        "something other than `fusion demo` created them",
    )
    demo.add_argument(
        "--cdc",
        action="store_true",
        help="instead: a shop's three tables in PostgreSQL, their changes read by Debezium, "
        "joined; then a row updated and one deleted in the database",
    )
    return parser


def _run(commands: Commands) -> None:
    run = commands.add(
        "run",
        "run the pipeline: every component, or --only one, until Ctrl-C",
        f"fusion {PIPELINE} run",
        f"fusion {PIPELINE} run --stop-when-idle 10",
        f"fusion {PIPELINE} run --only counter --metrics-port 9464",
        f"fusion {PIPELINE} run --counter-engine python",
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
    run.add_argument(
        "--replay-unmarked",
        action="store_true",
        help="replay a batch left by a crash whose exactly-once markers Kafka expired "
        "(its output may be published twice); without it such a start stops",
    )
    run.add_argument(
        "--rebuild-state",
        action="store_true",
        help="start without the lost checkpoint: each query where its last committed batch "
        "ended, the counter's state rebuilt from Elasticsearch and Kafka (what fired stays "
        "fired); without it a pipeline that ran before and lost its checkpoint stops",
    )
    run.add_argument(
        "--counter-engine",
        choices=("jvm", "python"),
        help="the code that keeps the counter's state: jvm (fast) or python (slower, the "
        "decisions' own code); setting [pipeline] counter_engine, default jvm (python "
        "where no javac is found)",
    )
    run.add_argument("--submitted", action="store_true", help=argparse.SUPPRESS)


def _generate(commands: Commands) -> None:
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


def _operations(commands: Commands) -> None:
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
    submit = commands.add(
        "spark-submit-args",
        "print --master (when one is set), --jars, --py-files and the entry script for "
        "spark-submit",
        f"spark-submit $(fusion spark-submit-args) {PIPELINE} run --only counter",
        "fusion spark-submit-args --master spark://master:7077",
    )
    submit.add_argument(
        "--master",
        metavar="URL",
        help="the Spark master to submit to (default: [spark] master or FUSION_SPARK_MASTER, "
        "if set; else spark-submit's own)",
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
