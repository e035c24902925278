"""`fusion bench soak`: an hour under load, killed every 10 min, Elasticsearch restarted once.

The pipeline runs as `fusion run` in its own process group, fed at a steady
rate (by default half the highest rate it sustains, found first by a short
:mod:`~fusion.bench.sustain.run` search on this machine). Every
``kill_every_minutes`` its whole process group is killed with SIGKILL and a
new `fusion run` starts on the same checkpoints; once, Elasticsearch (the
local runtime's) is stopped and started again. Throughout:

- every key's latency: the enriched record's Kafka timestamp less the send
  time of its last source record;
- every 10 s: the pipeline's resident memory (driver, JVM, Python workers),
  the servers' (Kafka, Elasticsearch), the counter's state keys (its
  Prometheus endpoint) and the consumer lag (its markers);
- the committed ready topic: which key fired how often.

At the end the input stops and the pipeline drains. Keys lost are the keys
sent that no enriched record carries (those reported incomplete are counted
by reason); duplicate fires, keys with more than one ready event. Per window
the figures are averaged, and each series is held to flat (:mod:`~fusion.bench.soak.report`).
"""

from __future__ import annotations

import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fusion import pipeline
from fusion.bench import (
    BenchOptions,
    Outputs,
    PipelineProcess,
    bench_config,
    git_commit,
    machine,
    produce_timed,
    restart_elasticsearch,
    servers_rss_mb,
)
from fusion.bench.soak.report import Sample, flatness, windows
from fusion.bench.sustain import SustainOptions, run_sustain, steady_dataset
from fusion.core import PipelineConfig, Settings, now_iso
from fusion.core.machine import free_port, procfs
from fusion.kafka import lag
from fusion.ops import teardown
from fusion.topology import reads, topology_of

SAMPLE_SECONDS = 10.0
CHUNK_SECONDS = 10.0  # the producer generates and sends this much at a time


@dataclass(frozen=True)
class SoakOptions:
    minutes: float = 60.0
    window_minutes: float = 5.0
    kill_every_minutes: float = 10.0
    es_restart_minute: float | None = 25.0  # None: no restart
    rate: float | None = None  # keys/s; None: half the highest sustained rate, found first
    sources: int = 4
    seed: int = 42
    state_ttl: str = "2m"  # the state fills to its TTL within the first window, then holds
    drain_seconds: float = 600.0
    search_step_seconds: float = 30.0


def run_soak(
    settings: Settings, options: SoakOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    rate, reason = _rate(settings, options, on_step)
    config = _config(settings, options)
    teardown.delete_all(config)
    pipeline.prepare(config)
    workdir = Path(tempfile.mkdtemp(prefix="fusion-soak-"))
    soak = Soak(config, options, rate, workdir, on_step)
    try:
        with Outputs(config) as outputs:
            figures = soak.run(outputs)
    finally:
        teardown.delete_all(config)
    return {
        "kind": "soak",
        "options": asdict(options),
        "rate": rate,
        "rate_reason": reason,
        "date": now_iso(),
        "commit": git_commit(),
        "machine": machine(settings),
        **figures,
    }


def _rate(
    settings: Settings, options: SoakOptions, on_step: Callable[[str], None]
) -> tuple[float, str]:
    if options.rate is not None:
        return options.rate, "given (--rate)"
    on_step("finding the highest sustained rate (a short search)")
    search = SustainOptions(
        sources=options.sources,
        step_seconds=options.search_step_seconds,
        start_rate=100.0,
        refine=1,
        at_rates=(),
        at_floor=(),
        warmup_seconds=60.0,
    )
    found = run_sustain(settings, search, on_step)["sustained"]
    if not found:
        raise ValueError("no rate was sustained in the search: give one with --rate")
    best = float(found["keys_per_second"])
    return best / 2, f"half of {best:,.0f} keys/s, the highest sustained in this run's search"


def _config(settings: Settings, options: SoakOptions) -> PipelineConfig:
    config = bench_config(
        settings, "batched", BenchOptions(1, options.sources), f"k{uuid.uuid4().hex[:6]}"
    )
    section = config.pipeline.model_copy(update={"state_ttl": _seconds(options.state_ttl)})
    endpoint = config.metrics.model_copy(update={"port": free_port()})
    return config.model_copy(update={"pipeline": section, "metrics": endpoint})


def _seconds(duration: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return float(duration[:-1]) * units[duration[-1]]


class Soak:
    """One soak: the producer, the kills, the samples; its figures."""

    def __init__(
        self,
        config: PipelineConfig,
        options: SoakOptions,
        rate: float,
        workdir: Path,
        on_step: Callable[[str], None],
    ) -> None:
        self.config, self.options, self.rate = config, options, rate
        self.workdir, self.on_step = workdir, on_step
        self.sent: dict[str, float] = {}  # key -> send time of its last record
        self.samples: list[Sample] = []
        self.kills: list[float] = []
        self.es_restart = "not planned"
        self.restarts: list[float] = []  # when (s) Elasticsearch was restarted
        self.start = 0.0
        self.produced = 0.0  # seconds the input took to send
        self.stages = reads(topology_of(config).select())
        self.run_process: PipelineProcess | None = None

    def run(self, outputs: Outputs) -> dict[str, Any]:
        duration = self.options.minutes * 60
        self.run_process = self._started()
        self.start = time.time()
        producing = threading.Thread(target=self._produce, args=(duration,), daemon=True)
        stop = threading.Event()
        sampling = threading.Thread(target=self._sample, args=(stop,), daemon=True)
        producing.start()
        sampling.start()
        try:
            self._disturb(producing, duration)
            drain = self._drain(outputs)
            stop.set()
            sampling.join(timeout=30)
            self.run_process.stop()
        finally:
            stop.set()
            self.run_process.__exit__(None, None, None)
        enriched = outputs.enriched(self.sent)
        lost = [key for key in self.sent if key not in enriched]
        latencies = [(self.sent[k] - self.start, at - self.sent[k]) for k, at in enriched.items()]
        disturbed = [minute * 60 for minute in self.kills] + self.restarts
        rows = windows(
            self.samples, latencies, self.options.window_minutes * 60, duration, disturbed
        )
        return {
            "keys_sent": len(self.sent),
            "keys_per_second_sent": round(len(self.sent) / max(self.produced, 1e-9), 1),
            "keys_enriched": len(enriched),
            "keys_lost": len(lost),
            # Why: reported incomplete (by reason), or never reported (still on its way).
            "lost_reported_incomplete": dict(outputs.incomplete(lost)),
            "duplicate_fires": outputs.duplicate_fires(),
            "drain_seconds": drain,
            "kills": self.kills,
            "es_restart": self.es_restart,
            "windows": rows,
            "flatness": flatness(rows),
            "samples": [asdict(s) for s in self.samples],
        }

    def _started(self) -> PipelineProcess:
        run = PipelineProcess(self.config, self.workdir).__enter__()
        run.wait_started()
        return run

    def _produce(self, duration: float) -> None:
        chunks = max(1, round(duration / CHUNK_SECONDS))
        for n in range(chunks):
            data = steady_dataset(
                self.config, self.rate, CHUNK_SECONDS, self.options.seed + n, f"W{n:05d}"
            )
            due = self.start + n * CHUNK_SECONDS
            records_per_second = self.rate * self.options.sources
            _, last_send = produce_timed(self.config, data, records_per_second, due)
            self.sent.update(last_send)
        self.produced = time.time() - self.start

    def _disturb(self, producing: threading.Thread, duration: float) -> None:
        """Kill and restart the pipeline on schedule, restart Elasticsearch once."""
        every = self.options.kill_every_minutes * 60
        restart_at = self.options.es_restart_minute
        if restart_at is not None and restart_at * 60 < duration:
            self.es_restart = "planned"
        while producing.is_alive():
            elapsed = time.time() - self.start
            assert self.run_process is not None
            if elapsed >= every * (len(self.kills) + 1):
                self.on_step(f"kill -9 at {elapsed / 60:.1f} min")
                self.run_process.kill()
                self.kills.append(round(elapsed / 60, 2))
                self.run_process = self._started()
            if (
                self.es_restart == "planned"
                and restart_at is not None
                and elapsed >= restart_at * 60
            ):
                self.on_step(f"restarting Elasticsearch at {elapsed / 60:.1f} min")
                self.es_restart = restart_elasticsearch(self.config) + f" at {elapsed / 60:.1f} min"
                self.restarts.append(elapsed)
            self.run_process.check()
            time.sleep(1.0)

    def _drain(self, outputs: Outputs) -> float:
        started = time.monotonic()
        self.on_step("draining")
        while True:
            assert self.run_process is not None
            self.run_process.check()
            done = len(outputs.enriched(self.sent)) == len(self.sent)
            if done and lag.behind(self.config, self.stages) == 0:
                return time.monotonic() - started
            if time.monotonic() - started > self.options.drain_seconds:
                return time.monotonic() - started  # what is missing counts as lost
            time.sleep(1.0)

    def _sample(self, stop: threading.Event) -> None:
        while not stop.wait(SAMPLE_SECONDS):
            run = self.run_process
            state = self._state_keys()
            if run is None or run.process is None or state is None:
                continue  # between a kill and the restart: no pipeline to read
            resident = sum(procfs.rss_mb(p) or 0 for p in procfs.descendants(run.process.pid))
            if not resident:
                continue  # the process just killed, its successor not yet ours
            try:
                behind = lag.behind(self.config, self.stages)
            except Exception:
                continue  # Kafka did not answer this time
            self.samples.append(
                Sample(
                    at=time.time() - self.start,
                    pipeline_rss_mb=float(resident),
                    servers_rss_mb=float(servers_rss_mb(self.config)),
                    state_keys=float(state),
                    lag_records=float(behind),
                )
            )

    def _state_keys(self) -> int | None:
        """The counter's state keys, from the running pipeline's Prometheus endpoint."""
        url = f"http://127.0.0.1:{self.config.metrics.port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                text = response.read().decode()
        except OSError:
            return None  # between a kill and the restart
        for line in text.splitlines():
            if line.startswith("fusion_state_keys "):
                return int(float(line.split()[1]))
        return None
