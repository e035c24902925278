"""`fusion bench idle`: what a pipeline with no input costs, and how late its deadlines fire.

Each scenario runs `fusion run` in its own process (:class:`PipelineProcess`)
on a 3-source pipeline and no input, lets it settle, then adds up the CPU
time of the process and every process under it (the Spark JVM, its Python
workers) over a window: cores used while idle. Scenarios: no deadline at a
few trigger intervals (the cost of an empty trigger), and a ``timeout`` set.

Then one deadline: a key with two of its three sources, ``timeout`` = 5 s.
Its lateness is the incomplete event's Kafka timestamp minus the moment its
deadline came (first ack + timeout), to hold against ``deadline_resolution``
plus one micro-batch.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fusion.bench import (
    BenchOptions,
    IdleError,
    PipelineProcess,
    bench_config,
    git_commit,
    machine,
    produce,
    started_on_fresh_topics,
    tree_cpu_seconds,
    write_text_files,
)
from fusion.core import PipelineConfig, Settings, now_iso
from fusion.kafka import client as kafka_client

SOURCES = 3
DEADLINE_SECONDS = 5.0


@dataclass(frozen=True)
class IdleOptions:
    # After start, the JVM's compiler threads go on compiling Spark's hot code for a minute
    # or so (0.04 cores still 50 s in, measured per thread): the steady state comes later.
    settle_seconds: float = 90.0
    window_seconds: float = 60.0  # CPU is added up over this long
    triggers: tuple[str, ...] = ("0", "100 milliseconds", "1 second")
    timeout: str = "30s"


def run_idle(settings: Settings, options: IdleOptions = IdleOptions()) -> dict[str, Any]:
    """Every scenario's idle cores, and one deadline's lateness; the report."""
    scenarios: list[dict[str, Any]] = []
    for trigger in options.triggers:
        cores = _idle_cores(settings, options, {"trigger_interval": trigger})
        scenarios.append({"trigger_interval": trigger, "timeout": None, "cores": cores})
    cores = _idle_cores(settings, options, {"timeout": options.timeout})
    scenarios.append({"trigger_interval": "default", "timeout": options.timeout, "cores": cores})
    lateness, resolution = _deadline_lateness(settings)
    return {
        "kind": "idle",
        "sources": SOURCES,
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        "window_seconds": options.window_seconds,
        "scenarios": scenarios,
        "deadline": {
            "timeout_seconds": DEADLINE_SECONDS,
            "resolution_seconds": resolution,
            "lateness_seconds": lateness,
        },
    }


def _config(settings: Settings, overrides: dict[str, Any]) -> PipelineConfig:
    base = bench_config(settings, "batched", BenchOptions(1, SOURCES), f"i{uuid.uuid4().hex[:6]}")
    data = base.model_dump(mode="python")
    data["pipeline"] |= overrides
    return PipelineConfig.model_validate(data)


def _idle_cores(settings: Settings, options: IdleOptions, overrides: dict[str, Any]) -> float:
    config = _config(settings, overrides)
    with started_on_fresh_topics(config, "fusion-idle-") as run:
        assert run.process is not None
        time.sleep(options.settle_seconds)
        run.check()
        before = tree_cpu_seconds(run.process.pid)
        time.sleep(options.window_seconds)
        run.check()
        used = tree_cpu_seconds(run.process.pid) - before
        run.stop()
    return round(used / options.window_seconds, 3)


def _deadline_lateness(settings: Settings) -> tuple[float, float]:
    """Seconds from one key's deadline to its incomplete event, and the clock's resolution."""
    config = _config(settings, {"timeout": f"{DEADLINE_SECONDS:g}s"})
    key = "late-1"
    present = config.sources[:2]
    with started_on_fresh_topics(config, "fusion-idle-") as run:
        value = json.dumps({config.key_field: key}).encode()
        produce(config, [(config.topic_of(s), key, value) for s in present])
        event, stamp = _first_record(config, config.incomplete_topic, run)
        run.stop()
    due = datetime.fromisoformat(event["first_ack_at"]).timestamp() + DEADLINE_SECONDS
    return round(stamp - due, 3), config.pipeline.deadline_resolution


def _first_record(
    config: PipelineConfig, topic: str, run: PipelineProcess, timeout: float = 120.0
) -> tuple[dict[str, Any], float]:
    """The first committed record of ``topic``: its JSON value and Kafka timestamp (seconds)."""
    consumer = kafka_client.consumer(config.kafka, f"bench-idle-{uuid.uuid4().hex}")
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run.check()
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            return json.loads(message.value() or b"{}"), message.timestamp()[1] / 1000
        raise IdleError(f"no record on {topic} within {timeout:.0f} s")
    finally:
        consumer.close()


def markdown(report: dict[str, Any]) -> str:
    """The idle report as Markdown: cores per scenario, the deadline's lateness."""
    lines = [
        f"# Idle: {report['sources']} sources, no input (commit {report['commit']})",
        "",
        f"CPU of `fusion run` and every process under it over {report['window_seconds']:g} s.",
        "",
        "| trigger_interval | timeout | cores |",
        "|---|---|---|",
    ]
    for s in report["scenarios"]:
        lines.append(f"| {s['trigger_interval']} | {s['timeout'] or '-'} | {s['cores']:.3f} |")
    d = report["deadline"]
    lines += [
        "",
        f"One key with a source missing, timeout {d['timeout_seconds']:g} s: its incomplete "
        f"event came {d['lateness_seconds']:.2f} s after its deadline "
        f"(deadline_resolution {d['resolution_seconds']:g} s).",
        "",
    ]
    return "\n".join(lines)


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """``<out_dir>/<timestamp>-idle-n<sources>.{json,md}``."""
    return write_text_files(out_dir, f"idle-n{report['sources']}", report, markdown(report))
