"""The options of `fusion bench <benchmark>`: each benchmark its own, with its help and examples.

Every benchmark runs against the servers the settings name (`fusion infra up`
for the local runtime) and writes its report, Markdown and JSON (and a chart
where it has one), under ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fusion.cli.help import Commands
from fusion.core import PipelineSection

# The pipeline file's own field: the option's default and bounds are its, stated once.
FANOUT_PAGE = PipelineSection.model_fields["fanout_page"]
PAGE_MIN, PAGE_MAX = (
    next(getattr(m, bound) for m in FANOUT_PAGE.metadata if hasattr(m, bound))
    for bound in ("ge", "le")
)


def add_bench(bench: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    runs = Commands(bench, common)
    burst = runs.add(
        "burst",
        "naive vs counted vs batched on the same data, against the floor",
        "fusion bench burst --keys 14000 --sources 4",
        "fusion bench burst --modes batched --warm --set topic_partitions=2",
    )
    _keys(burst, "join keys (14,000)")
    _sources(burst)
    burst.add_argument(
        "--modes", default="naive,counted,batched", help="comma-separated (naive,counted,batched)"
    )
    _seed(burst)
    _set(burst)
    _runs(burst, "repeat; each mode reports its median run (1)")
    burst.add_argument(
        "--rate", type=float, default=0.0, help="records/s to produce at (0: all at once)"
    )
    burst.add_argument(
        "--max-offsets",
        type=int,
        metavar="N",
        help="records per micro-batch and query (the pipeline's, 100,000)",
    )
    burst.add_argument(
        "--warm",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="measure a burst into a running pipeline: first N bursts on other keys, "
        "unmeasured (1 when N is left out)",
    )
    _out(burst)

    sustain = runs.add(
        "sustain",
        "the highest steady rate the pipeline keeps up with within the latency objective "
        "(batched mode), its latency per hop at 25/50/100 %% of that rate, and the highest "
        "rate it keeps up with at all",
        "fusion bench sustain --runs 3",
        "fusion bench sustain --step-seconds 30 --set layout=stages",
    )
    _sources(sustain)
    _seed(sustain)
    _set(sustain)
    _runs(sustain, "repeat, each run from a fresh pipeline beside its own floor (1)")
    _sustain_steps(sustain)
    _out(sustain)

    formats = runs.add(
        "formats",
        "Debezium change events (and Avro, with a registry) against plain JSON rows, a burst "
        "and sustained, side by side",
        "fusion bench formats --keys 20000 --runs 3 --step-seconds 30",
    )
    _keys(formats, "join keys of the burst (20,000)")
    _sources(formats)
    _seed(formats)
    _runs(formats, "bursts per format; each reports its median (1)")
    _sustain_steps(formats)
    _out(formats)

    fanout = runs.add(
        "fanout",
        "a dimension row renamed and every key naming it enriched again, against the floor "
        "of bulk-writing them",
        "fusion bench fanout --runs 3",
        "fusion bench fanout --keys 10000 --page 5000",
        "fusion bench fanout --chain --runs 3",
    )
    _keys(fanout, "keys naming the renamed row (10,000 and 100,000)")
    _runs(fanout, "renames per size; each reports its median (1)")
    fanout.add_argument(
        "--page",
        type=_page,
        default=FANOUT_PAGE.default,
        metavar="KEYS",
        help=f"the pipeline's fanout_page, keys per page of a fan-out ({FANOUT_PAGE.default:,})",
    )
    chain = "rename a company 100 brands name: items reached up a chain (100,000 unless --keys)"
    fanout.add_argument("--chain", action="store_true", help=chain)
    _out(fanout)

    children = runs.add(
        "children",
        "orders with their lines (a children source): a burst, one order's 5,000 lines "
        "changed at once, and lines changed one by one at a tenth of the floor",
        "fusion bench children --runs 3",
        "fusion bench children --keys 1000",
        "fusion bench children --set max_offsets_per_trigger=20000",
    )
    _keys(children, "orders of the burst, and lines changed one by one (10,000)")
    _set(children)
    children.add_argument(
        "--warm", type=int, metavar="ORDERS",
        help="orders enriched first, not measured (a twentieth of the burst's)",
    )  # fmt: skip
    _runs(children, "runs; each figure is their median (1)")
    _out(children)

    soak = runs.add(
        "soak",
        "--minutes at half the highest sustained rate (or --rate), the pipeline killed with "
        "kill -9 every --kill-every minutes and Elasticsearch restarted once; keys lost, keys "
        "fired twice, and latency, memory, state and lag per window",
        "fusion bench soak --minutes 60",
        "fusion bench soak --minutes 10 --rate 200 --kill-every 2",
    )
    soak.add_argument("--minutes", type=float, default=60.0, help="how long to soak (60)")
    soak.add_argument(
        "--rate", type=float, help="keys/s (default: half the highest sustained, found first)"
    )
    soak.add_argument(
        "--kill-every", type=float, default=10.0, metavar="MINUTES", help="kill -9 every (10)"
    )
    soak.add_argument(
        "--window", type=float, default=5.0, metavar="MINUTES", help="report window (5)"
    )
    _sources(soak)
    _seed(soak)
    _out(soak)

    idle = runs.add(
        "idle",
        "the cores a pipeline with no input uses (trigger intervals, a deadline set), and "
        "how late a deadline fires",
        "fusion bench idle",
    )
    _out(idle)

    memory = runs.add(
        "memory",
        "the peak memory of the pipeline's Spark JVM and Python workers with records of "
        "1 KB and of 500 KB",
        "fusion bench memory",
        "fusion bench memory --keys 500 --heap 512m",
    )
    _keys(memory, "join keys (200)")
    memory.add_argument("--heap", help="the Spark JVM's heap, e.g. 512m (spark.driver.memory)")
    _out(memory)

    status = runs.add(
        "status",
        "how long `fusion status` takes and its driver's peak memory with 100,000 and "
        "1,000,000 keys in the counter's state",
        "fusion bench status",
        "fusion bench status --keys 100000",
    )
    _keys(status, "keys in the counter's state, one size (100,000 and 1,000,000)")
    _out(status)

    reconcile = runs.add(
        "reconcile",
        "`fusion reconcile` over keys complete in Elasticsearch and never enriched, timed, "
        "with its processes' peak memory",
        "fusion bench reconcile --keys 100000",
    )
    _keys(reconcile, "complete keys never enriched (100,000)")
    _out(reconcile)

    scale = runs.add(
        "scale",
        "the burst over K = 1k/14k/100k keys and N = 2/4/8 sources: the scaling curve",
        "fusion bench scale",
    )
    _out(scale)


def _keys(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--keys", type=int, help=help)


def _sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sources", type=int, default=4, help="sources per key (4)")


def _seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=42, help="random seed of the dataset (42)")


def _runs(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--runs", type=int, default=1, help=help)


def _out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="report directory (bench/results)"
    )


def _set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        action="append",
        metavar="OPTION=VALUE",
        help="a [pipeline] option for the benchmark's pipeline, e.g. topic_partitions=2 "
        "(repeatable)",
    )


def _sustain_steps(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_argument_group("sustained load")
    steps.add_argument("--step-seconds", type=float, default=60.0, help="seconds a step (60)")
    steps.add_argument("--start-rate", type=float, default=100.0, help="first rate, keys/s (100)")
    steps.add_argument("--max-rate", type=float, default=5000.0, help="highest rate tried (5,000)")
    steps.add_argument(
        "--no-search", action="store_true", help="no search: only the steps --at and --at-floor ask"
    )
    steps.add_argument(
        "--slo",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="the latency objective: a rate is sustained if it keeps up with p99 <= this (3)",
    )
    steps.add_argument(
        "--at",
        type=float,
        action="append",
        metavar="KEYS_PER_S",
        help="also measure a step at this rate, reported apart (repeatable)",
    )
    steps.add_argument(
        "--at-floor",
        type=float,
        action="append",
        metavar="FRACTION",
        help="also measure a step at this fraction of the floor (the rate at which this "
        "machine bulk-indexes the same documents from Python, measured in the same run), "
        "reported apart (repeatable; default 0.1)",
    )
    steps.add_argument(
        "--warmup-seconds",
        type=float,
        default=120.0,
        help="a first step, not reported, while the JVM compiles Spark's hot code (120)",
    )


def _page(text: str) -> int:
    """A fan-out page size as the pipeline file takes it."""
    try:
        page = int(text)
    except ValueError:
        page = PAGE_MIN - 1
    if not PAGE_MIN <= page <= PAGE_MAX:
        message = f"{text!r}: a number of keys from {PAGE_MIN:,} to {PAGE_MAX:,}"
        raise argparse.ArgumentTypeError(message)
    return page
