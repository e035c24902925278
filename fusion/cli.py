"""The ``fusion`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from fusion import clients
from fusion.errors import FusionError
from fusion.infra.artifacts import ARTIFACT_SETS, ArtifactCache
from fusion.infra.runtime import SERVICES, Endpoints, LocalRuntime
from fusion.settings import Settings

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.load(args.config)
        result: int = args.handler(args, settings)
        return result
    except FusionError as exc:
        err.print(f"[bold red]fusion: error:[/] {exc}", markup=True, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fusion", description=__doc__)
    parser.add_argument("--config", type=Path, help="settings/pipeline TOML file")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    infra = commands.add_parser("infra", help="run a local Kafka + Elasticsearch (no Docker)")
    infra_commands = infra.add_subparsers(required=True, metavar="ACTION")
    up = infra_commands.add_parser("up", help="fetch (first time), start and wait until healthy")
    up.add_argument("--kafka-port", type=int, help="broker port (default 9092)")
    up.add_argument("--es-port", type=int, help="Elasticsearch HTTP port (default 9200)")
    up.set_defaults(handler=_infra_up)
    down = infra_commands.add_parser("down", help="stop both servers, keeping their data")
    down.add_argument("--purge", action="store_true", help="also delete Kafka and ES data")
    down.set_defaults(handler=_infra_down)
    status = infra_commands.add_parser("status", help="health and version of each server")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=_infra_status)
    logs = infra_commands.add_parser("logs", help="print a server's log")
    logs.add_argument("service", choices=SERVICES)
    logs.add_argument("-n", "--lines", type=int, default=50, help="how many lines (default 50)")
    logs.set_defaults(handler=_infra_logs)
    fetch = infra_commands.add_parser("fetch", help="only download the artifacts into the cache")
    fetch.add_argument("--only", choices=ARTIFACT_SETS, help="fetch one set only")
    fetch.set_defaults(handler=_infra_fetch)

    check = commands.add_parser("check", help="check the configured Kafka and Elasticsearch answer")
    check.set_defaults(handler=_check)

    jars = commands.add_parser(
        "spark-submit-args", help="print the --jars argument spark-submit needs for Kafka"
    )
    jars.set_defaults(handler=_spark_submit_args)

    demo = commands.add_parser("demo", help="bring the local runtime up and show it healthy")
    demo.set_defaults(handler=_demo)
    return parser


def _runtime(settings: Settings) -> LocalRuntime:
    return LocalRuntime.from_settings(settings.runtime)


def _up(settings: Settings, kafka_port: int | None = None, es_port: int | None = None) -> Endpoints:
    runtime = _runtime(settings)
    with err.status("starting the local runtime") as spinner:
        endpoints = runtime.up(
            kafka_port=kafka_port or settings.runtime.kafka_port,
            es_port=es_port or settings.runtime.es_port,
            on_step=lambda step: spinner.update(step),
        )
    return endpoints


def _infra_up(args: argparse.Namespace, settings: Settings) -> int:
    endpoints = _up(settings, args.kafka_port, args.es_port)
    out.print(f"Kafka {endpoints.kafka_version}          {endpoints.kafka_bootstrap}")
    out.print(f"Elasticsearch {endpoints.es_version}  {endpoints.es_url}")
    out.print(
        f"export FUSION_KAFKA_BOOTSTRAP={endpoints.kafka_bootstrap} "
        f"FUSION_ES_URL={endpoints.es_url}"
    )
    return 0


def _infra_down(args: argparse.Namespace, settings: Settings) -> int:
    runtime = _runtime(settings)
    with err.status("stopping Kafka and Elasticsearch"):
        runtime.down(purge=args.purge)
    out.print("stopped" + (f"; deleted {runtime.state_dir}" if args.purge else ""))
    return 0


def _infra_status(args: argparse.Namespace, settings: Settings) -> int:
    statuses = _runtime(settings).status()
    if args.json:
        out.print_json(json.dumps([asdict(s) for s in statuses]))
    else:
        table = Table("service", "state", "address", "version", "pid")
        for s in statuses:
            state = "healthy" if s.healthy else ("running, not healthy" if s.running else "stopped")
            table.add_row(s.name, state, s.address or "-", s.version or "-", str(s.pid or "-"))
        out.print(table)
    return 0 if statuses and all(s.healthy for s in statuses) else 1


def _infra_logs(args: argparse.Namespace, settings: Settings) -> int:
    path = _runtime(settings).log_file(args.service)
    if not path.exists():
        err.print(f"no log yet at {path}: has `fusion infra up` run?")
        return 1
    lines = path.read_text(errors="replace").splitlines()[-args.lines :]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _infra_fetch(args: argparse.Namespace, settings: Settings) -> int:
    cache = ArtifactCache(settings.runtime.home)
    for name in [args.only] if args.only else ARTIFACT_SETS:
        with err.status(f"fetching {name} with Maven"):
            cache.fetch(name)
    out.print(f"artifacts ready in {cache.root}")
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> int:
    brokers = clients.check_kafka(settings.kafka)
    out.print(f"Kafka at {settings.kafka.bootstrap}: {brokers} broker(s) answering")
    version = clients.check_elasticsearch(settings.elasticsearch)
    out.print(f"Elasticsearch at {settings.elasticsearch.url}: version {version}")
    return 0


def _spark_submit_args(args: argparse.Namespace, settings: Settings) -> int:
    jars = ArtifactCache(settings.runtime.home).spark_kafka_jars()
    out.print("--jars " + ",".join(str(jar) for jar in jars), soft_wrap=True)
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    endpoints = _up(settings)
    out.print(f"Kafka {endpoints.kafka_version} at {endpoints.kafka_bootstrap}")
    out.print(f"Elasticsearch {endpoints.es_version} at {endpoints.es_url}")
    return _infra_status(argparse.Namespace(json=False), settings)


if __name__ == "__main__":
    sys.exit(main())
