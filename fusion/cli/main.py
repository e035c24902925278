"""The ``fusion`` command line: each command's handler (its options: :mod:`fusion.cli.parser`).

Every handler returns an exit code; whatever it raises ends as one line on
stderr and the exit code of its class (:mod:`fusion.cli.failures`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.live import Live
from rich.markup import escape

from fusion import pipeline
from fusion.bench import STARTED, GenOptions, build_dataset, naive, produce, write_expected
from fusion.cli import failures
from fusion.cli import parser as cli_parser
from fusion.cli.bench_commands import BENCH_HANDLERS
from fusion.cli.console import err, out, pipeline_of
from fusion.cli.infra_commands import (
    infra_docker_command,
    infra_down_command,
    infra_fetch_command,
    infra_images_command,
    infra_logs_command,
    infra_status_command,
    infra_up_command,
    local_runtime,
    up,
)
from fusion.cli.ops_commands import (
    check_command,
    explain_command,
    reconcile_command,
    status_command,
    submit_args_command,
)
from fusion.cli.terminal import Tracker
from fusion.core import ConfigError, ExitCode, PipelineConfig, Settings, read_toml
from fusion.kafka import topics as kafka_topics
from fusion.observe import Metrics
from fusion.topology import Query, topology_of

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


def with_run_options(config: PipelineConfig, args: argparse.Namespace) -> PipelineConfig:
    """The pipeline as ``fusion run``'s options change it, for this run only."""
    if args.metrics_port is not None:
        if not 0 <= args.metrics_port <= 65535:
            raise ConfigError("--metrics-port", "", f"{args.metrics_port} is not a port (0-65535)")
        endpoint = config.metrics.model_copy(update={"port": args.metrics_port})
        config = config.model_copy(update={"metrics": endpoint})
    options = {
        "counter_engine": args.counter_engine,
        "replay_unmarked": args.replay_unmarked,
        "rebuild_state": args.rebuild_state,
    }
    chosen = {name: value for name, value in options.items() if value}
    if chosen:
        section = config.pipeline.model_copy(update=chosen)
        config = config.model_copy(update={"pipeline": section})
    return config


def run_command(args: argparse.Namespace, settings: Settings) -> int:
    config = with_run_options(pipeline_of(settings), args)
    # The benchmark's naive baseline is no stage of the pipeline: it brings its own query.
    queries: tuple[Query, ...]
    ships: tuple[str, ...] = ()
    if args.only == naive.NAME:
        queries, starters, ships = (naive.query(config),), naive.NAIVE_STARTERS, naive.SHIPS
    else:
        queries, starters = topology_of(config).select(args.only), pipeline.STARTERS
    metrics = Metrics()
    interrupted = False
    try:
        with Live(console=err, refresh_per_second=2, transient=False) as live:

            def say(line: str) -> None:
                live.console.print(f"fusion: {escape(line)}", highlight=False)

            hooks = pipeline.Hooks(
                tick=lambda m: live.update(pipeline.status_line(m)),
                on_started=lambda: say(STARTED),
                say=say,
            )
            pipeline.execute(
                config,
                queries,
                metrics,
                args.stop_when_idle,
                hooks,
                submitted=args.submitted,
                starters=starters,
                ships=ships,
            )
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C: the queries stopped; say what they did
    finally:
        if not err.is_terminal:
            err.file.write("\n")  # the status line's last frame ends without one
    out.print_json(json.dumps(pipeline.summary(metrics)))
    return ExitCode.INTERRUPTED if interrupted else ExitCode.OK


def generate_command(args: argparse.Namespace, settings: Settings) -> int:
    config = pipeline_of(settings)
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
    kafka_topics.ensure_topics(config)
    total = len(dataset.records)
    with Tracker(err, "producing", "records", total) as tracker:
        sent = produce(config, dataset.records, tracker.update)
    out.print(
        f"produced {sent:,} records for {args.keys:,} keys "
        f"({len(dataset.expected):,} complete, {len(dataset.missing):,} missing a source); "
        f"expected join in {expected}"
    )
    return 0


def demo_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.cli.demo import DemoOptions, run_demo

    if args.cdc:
        from fusion.cli.demo_cdc import run_cdc_demo

        runtime = local_runtime(settings)
        endpoints = up(settings, cdc_ports=runtime.cdc_ports())
        return run_cdc_demo(endpoints, out, err, runtime.state_dir)
    endpoints = up(settings)
    return run_demo(DemoOptions(args.config, args.keys, args.reset), endpoints, out, err)


HANDLERS: dict[str, Handler] = {
    "infra up": infra_up_command,
    "infra down": infra_down_command,
    "infra status": infra_status_command,
    "infra logs": infra_logs_command,
    "infra fetch": infra_fetch_command,
    "infra docker": infra_docker_command,
    "infra images": infra_images_command,
    "check": check_command,
    "run": run_command,
    "generate": generate_command,
    "explain": explain_command,
    "status": status_command,
    "reconcile": reconcile_command,
    "spark-submit-args": submit_args_command,
    **BENCH_HANDLERS,
    "demo": demo_command,
}


if __name__ == "__main__":
    sys.exit(main())
