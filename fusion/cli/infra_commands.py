"""`fusion infra ...`: start, stop, inspect and fetch the local runtime."""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict
from typing import Any

from rich.table import Table

from fusion.cli.console import err, out
from fusion.core import ConfigError, ExitCode, Settings
from fusion.infra import (
    ARTIFACT_SETS,
    ArtifactCache,
    Endpoints,
    InfraError,
    LocalRuntime,
    preparing,
)
from fusion.infra.prometheus import Scraping
from fusion.ops import ALERT_RULES


def local_runtime(settings: Settings, secure: bool | None = None) -> LocalRuntime:
    runtime = LocalRuntime.from_settings(settings.runtime)
    if secure is not None:
        runtime.secure = secure
    return runtime


def up(settings: Settings, secure: bool | None = None, **options: Any) -> Endpoints:
    """Start the local runtime; ``options``: :meth:`LocalRuntime.up`'s, ports from settings."""
    options["kafka_port"] = options.get("kafka_port") or settings.runtime.kafka_port
    options["es_port"] = options.get("es_port") or settings.runtime.es_port
    with err.status("starting the local runtime") as spinner:
        return local_runtime(settings, secure).up(
            on_step=lambda step: spinner.update(step),
            # What it changed on the machine (a system user, permissions): said once, when done.
            on_change=lambda change: spinner.console.print(f"fusion: {change}", highlight=False),
            **options,
        )


def infra_up_command(args: argparse.Namespace, settings: Settings) -> int:
    if args.es_version:
        if not re.fullmatch(r"\d+\.\d+\.\d+", args.es_version):
            raise ConfigError(
                "--es-version", "", f"expected X.Y.Z (e.g. 9.1.10), not {args.es_version!r}"
            )
        runtime = settings.runtime.model_copy(update={"es_version": args.es_version})
        settings = settings.model_copy(update={"runtime": runtime})
    endpoints = up(
        settings,
        secure=True if args.secure else None,
        kafka_port=args.kafka_port,
        es_port=args.es_port,
        spark_workers=args.spark_workers,
        spark_port=args.spark_port,
        cdc_ports=(args.pg_port, args.connect_port) if args.cdc else None,
        registry_port=args.registry_port if args.registry else None,
        prometheus=(args.prometheus_port, Scraping((ALERT_RULES,))) if args.prometheus else None,
    )
    out.print(f"Kafka {endpoints.kafka_version}          {endpoints.kafka_bootstrap}")
    out.print(f"Elasticsearch {endpoints.es_version}  {endpoints.es_url}")
    if endpoints.env_file:
        # The passwords stay in the file: nothing secret reaches the terminal.
        out.print(
            f"secured (SASL_SSL, HTTPS); settings with credentials: source {endpoints.env_file}"
        )
        return 0
    exports = f"FUSION_KAFKA_BOOTSTRAP={endpoints.kafka_bootstrap} FUSION_ES_URL={endpoints.es_url}"
    if endpoints.spark_master:
        out.print(f"Spark master         {endpoints.spark_master} ({args.spark_workers} workers)")
        exports += f" FUSION_SPARK_MASTER={endpoints.spark_master}"
    pg_url, connect_url = endpoints.cdc
    if pg_url and connect_url:
        out.print(f"PostgreSQL           {pg_url}")
        out.print(f"Kafka Connect        {connect_url} (Debezium's PostgreSQL connector)")
    if endpoints.registry:
        out.print(f"Schema registry      {endpoints.registry} (Apicurio, Confluent's API)")
        exports += f" FUSION_REGISTRY_URL={endpoints.registry}"
    if endpoints.prometheus:
        out.print(f"Prometheus           {endpoints.prometheus} (alerts: {ALERT_RULES})")
    out.print(f"export {exports}")
    return 0


def infra_down_command(args: argparse.Namespace, settings: Settings) -> int:
    runtime = local_runtime(settings)
    with err.status("stopping Kafka and Elasticsearch"):
        runtime.down(purge=args.purge)
    out.print("stopped" + (f"; deleted {runtime.state_dir}" if args.purge else ""))
    return 0


def infra_status_command(args: argparse.Namespace, settings: Settings) -> int:
    statuses = local_runtime(settings).status()
    if args.json:
        out.print_json(json.dumps([asdict(s) for s in statuses]))
    else:
        table = Table("service", "state", "address", "version", "pid")
        for s in statuses:
            state = "healthy" if s.healthy else ("running, not healthy" if s.running else "stopped")
            table.add_row(s.name, state, s.address or "-", s.version or "-", str(s.pid or "-"))
        out.print(table)
    return ExitCode.OK if statuses and all(s.healthy for s in statuses) else ExitCode.UNAVAILABLE


def infra_logs_command(args: argparse.Namespace, settings: Settings) -> int:
    path = local_runtime(settings).log_file(args.service)
    if not path.exists():
        raise InfraError(f"no log yet at {path}: start the servers with `fusion infra up`")
    lines = path.read_text(errors="replace").splitlines()[-args.lines :]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def infra_fetch_command(args: argparse.Namespace, settings: Settings) -> int:
    cache = ArtifactCache(settings.runtime.home, settings.runtime.es_version)
    for name in args.only or ARTIFACT_SETS:
        with err.status(preparing(name)):
            cache.fetch(name)
    out.print(f"artifacts ready in {cache.root}")
    return 0


def infra_docker_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.infra.containers import engine as docker

    if args.stop:
        root, host = docker.private_host(settings.runtime.home)
        docker.stop(docker.Engine(host, root))
        err.print(f"stopped the private Docker engine at {host}", highlight=False)
        return 0
    with err.status("finding a Docker engine"):
        engine = docker.find_or_start(settings.runtime.home)
    if engine.host is not None:
        out.print(f"export DOCKER_HOST={engine.host}", highlight=False)
    return 0


def infra_images_command(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from fusion.infra.containers import engine as docker

    repo = Path.cwd()
    if not (repo / "Dockerfile.offline").is_file():
        raise ConfigError(
            "images", str(repo), "run it in Fusion's source checkout (Dockerfile.offline is there)"
        )
    with err.status("finding a Docker engine") as spinner:
        engine = docker.find_or_start(settings.runtime.home)
        logs = settings.runtime.home / "logs" / "images"
        docker.build_images(engine, repo, logs, on_step=lambda step: spinner.update(step))
    host = f" (DOCKER_HOST={engine.host})" if engine.host else ""
    out.print(f"images {docker.BASE_IMAGE} and {docker.PROJECT_IMAGE} ready{host}", highlight=False)
    return 0
