"""The ``fusion`` command line: each command's handler (its options: :mod:`fusion.cli.parser`).

Every handler returns an exit code; whatever it raises ends as one line on
stderr and the exit code of its class (:mod:`fusion.cli.failures`).
"""

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

from fusion import pipeline
from fusion.bench import naive
from fusion.bench.generator import GenOptions, build_dataset, produce, write_expected
from fusion.bench.process import STARTED
from fusion.cli import failures
from fusion.cli import parser as cli_parser
from fusion.cli.terminal import Tracker
from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError, ExitCode, InfraError
from fusion.core.settings import Settings, read_toml
from fusion.infra.artifacts import ARTIFACT_SETS, ArtifactCache, preparing
from fusion.infra.runtime import Endpoints, LocalRuntime
from fusion.runtime import clients, topology
from fusion.runtime.metrics import Metrics

# Lines are never wrapped nor cut: a log file or CI output keeps each message on one line.
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
for _console in (err, out):
    if not _console.is_terminal:
        _console.width = 1_000  # the status line's last frame is cut at the width

Handler = Callable[[argparse.Namespace, Settings], int]


def main(argv: Sequence[str] | None = None) -> int:
    args = cli_parser.build().parse_args(argv)
    debug = getattr(args, "debug", False)
    if debug:
        logging.basicConfig(
            level=logging.DEBUG, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        # py4j logs every command sent to the JVM at DEBUG, Kafka options (and
        # their SASL password) among them: its protocol is no one's debug line.
        logging.getLogger("py4j").setLevel(logging.INFO)
    settings: Settings | None = None
    try:
        args.config = getattr(args, "config", None)
        settings = load_config(args.config)
        if getattr(args, "verbose", False):
            spark = settings.spark.model_copy(update={"log_to_console": True})
            settings = settings.model_copy(update={"spark": spark})
        return HANDLERS[args.command](args, settings)
    except KeyboardInterrupt:
        err.print("fusion: interrupted")
        return ExitCode.INTERRUPTED
    except Exception as exc:
        if debug:
            err.print_exception()
        code, line = failures.report(exc, settings, debug)
        err.print(f"[bold red]fusion: error:[/] {escape(line)}", soft_wrap=True)
        return code


def load_config(path: Path | None) -> Settings:
    """A :class:`PipelineConfig` if the file has a ``[pipeline]`` table, else plain settings."""
    if path is not None and "pipeline" in read_toml(path):
        return PipelineConfig.load(path)
    return Settings.load(path)


def _pipeline(settings: Settings) -> PipelineConfig:
    if not isinstance(settings, PipelineConfig):
        raise ConfigError(
            "--config", "", "this command needs a pipeline file with [pipeline] and [[sources]] "
            "tables, e.g. --config examples/healthcare.toml"
        )  # fmt: skip
    return settings


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
            # What it changed on the machine (a system user, permissions): said once, when done.
            on_change=lambda change: spinner.console.print(f"fusion: {change}", highlight=False),
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
    return ExitCode.OK if statuses and all(s.healthy for s in statuses) else ExitCode.UNAVAILABLE


def _infra_logs(args: argparse.Namespace, settings: Settings) -> int:
    path = _runtime(settings).log_file(args.service)
    if not path.exists():
        raise InfraError(f"no log yet at {path}: start the servers with `fusion infra up`")
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
    if args.metrics_port is not None:
        if not 0 <= args.metrics_port <= 65535:
            raise ConfigError("--metrics-port", "", f"{args.metrics_port} is not a port (0-65535)")
        endpoint = config.metrics.model_copy(update={"port": args.metrics_port})
        config = config.model_copy(update={"metrics": endpoint})
    # The benchmark's naive baseline is no stage of the pipeline: it says what it runs.
    selection = naive.selection() if args.only == "naive" else pipeline.select(config, args.only)
    metrics = Metrics()
    interrupted = False
    try:
        with Live(console=err, refresh_per_second=2, transient=False) as live:

            def say(line: str) -> None:
                live.console.print(f"fusion: {line}", highlight=False)

            hooks = pipeline.Hooks(
                tick=lambda m: live.update(pipeline.status_line(m)),
                on_started=lambda: say(STARTED),
                say=say,
            )
            pipeline.execute(
                config, selection, metrics, args.stop_when_idle, hooks, submitted=args.submitted
            )
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C: the queries stopped; say what they did
    finally:
        if not err.is_terminal:
            err.file.write("\n")  # the status line's last frame ends without one
    out.print_json(json.dumps(pipeline.summary(metrics)))
    return ExitCode.INTERRUPTED if interrupted else ExitCode.OK


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
    total = len(dataset.records)
    with Tracker(err, "producing", "records", total) as tracker:
        sent = produce(config, dataset.records, tracker.update)
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
    from fusion.ops import explain

    config = _pipeline(settings)
    clients.check_elasticsearch(config.elasticsearch)
    with err.status("reading Elasticsearch and the counter's state"):
        spark = clients.spark_session(config, app_name=f"fusion-explain-{config.name}")
        report = explain.explain(config, explain.gather(spark, config, args.key))
    return _print_report(report, explain.render, args.json)


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.ops import status

    config = _pipeline(settings)
    clients.check_kafka(config.kafka)
    with err.status("reading metrics, offsets and the counter's state"):
        spark = None
        if not args.no_state:
            spark = clients.spark_session(config, app_name=f"fusion-status-{config.name}")
        report = status.build(config, status.gather(spark, config))
    return _print_report(report, status.render, args.json)


def _reconcile(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.ops import reconcile

    config = _pipeline(settings)
    clients.check_kafka(config.kafka)
    clients.check_elasticsearch(config.elasticsearch)
    topology.ensure_topics(config)
    with Tracker(err, "scanning the source indexes", "keys") as tracker:

        def progress(report: reconcile.Report) -> None:
            if report.planned:
                tracker.update(report.enriched, report.planned, "enriching the planned keys")
            else:
                tracker.update(report.scanned)

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
    from importlib.util import find_spec

    from fusion.runtime.shipping import package_zip

    jars = ",".join(str(j) for j in clients.spark_jars(settings))
    code = package_zip(settings.runtime.home)
    # Found, not imported: the entry script imports this module.
    spec = find_spec("fusion.cli.submit")
    assert spec is not None and spec.origin is not None
    out.print(f"--jars {jars} --py-files {code} {spec.origin}", soft_wrap=True)
    return 0


def _bench(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench import burst as bench

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
    steps = 2 + args.runs * (1 + len(modes))  # warm-up, floor and modes per run, counter alone
    with Tracker(err, "benchmark", "steps", steps, rate=False) as tracker:
        report = bench.run_bench(settings, options, on_step=tracker.step)
    return _print_bench(bench.markdown(report), bench.write_report(report, args.out))


def _bench_sustain(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.bench import sustain as bench_sustain

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
    with Tracker(err, "sustained-load benchmark", "steps", rate=False) as tracker:
        report = bench_sustain.run_sustain(settings, options, on_step=tracker.step)
    return _print_bench(
        bench_sustain.markdown(report), bench_sustain.write_report(report, args.out)
    )


def _print_bench(text: str, paths: tuple[Path, ...]) -> int:
    out.print(text, markup=False)
    out.print("written: " + ", ".join(str(p) for p in paths))
    return 0


def _bench_scale(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import datetime

    from fusion.bench import burst as bench

    clients.check_kafka(settings.kafka)
    clients.check_elasticsearch(settings.elasticsearch)
    with Tracker(err, "scaling benchmark", "steps", rate=False) as tracker:
        reports = bench.run_scale(settings, on_step=tracker.step)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stamp}-scale.json").write_text(json.dumps(reports, indent=2))
    bench.scale_chart(reports, args.out / f"{stamp}-scale.png")
    for report in reports:
        out.print(bench.markdown(report), markup=False)
    out.print(f"written: {args.out / (stamp + '-scale.json')}, {args.out / (stamp + '-scale.png')}")
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.cli.demo import DemoOptions, run_demo

    endpoints = _up(settings)
    return run_demo(DemoOptions(args.config, args.keys, args.reset), endpoints, out, err)


HANDLERS: dict[str, Handler] = {
    "infra up": _infra_up,
    "infra down": _infra_down,
    "infra status": _infra_status,
    "infra logs": _infra_logs,
    "infra fetch": _infra_fetch,
    "check": _check,
    "run": _run,
    "generate": _generate,
    "explain": _explain,
    "status": _status,
    "reconcile": _reconcile,
    "spark-submit-args": _submit_args,
    "bench": _bench,
    "bench-scale": _bench_scale,
    "demo": _demo,
}


if __name__ == "__main__":
    sys.exit(main())
