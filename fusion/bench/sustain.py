"""`fusion bench --sustain`: the highest steady rate the pipeline keeps up with, and its latency.

One batched pipeline runs in its own process (:class:`PipelineProcess`) for
the whole measurement. Each *step* produces fresh keys at a steady rate for
``step_seconds``: every key's N records, in random order, within about a
second of each other. For each key the latency is

    (the enriched record's Kafka timestamp) - (the send time of its last source record)

The enricher publishes that record only after Elasticsearch confirmed the
enriched document with ``refresh=wait_for``, so the timestamp is taken when
the document is searchable, never before. The benchmark reads the enriched
topic as any ``read_committed`` consumer would.

A step is *sustained* when every key was enriched and the pipeline's backlog
(records its queries still have to read, sampled every ``SAMPLE_SECONDS``)
did not grow: the largest backlog in the last third of the step is at most
1.5 times the largest in the middle third plus two seconds of input. A pipeline
slower than the rate builds backlog linearly, which this catches; the first
third is left out because a backlog builds up to its steady size there.

The search doubles the rate from ``start_rate`` until a step is not
sustained, then bisects ``refine`` times. The highest sustained rate is then
reported with the latency at 25 %, 50 % and 100 % of it (the 100 % step is
the search's own).
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from fusion import pipeline
from fusion.bench.burst import (
    BenchOptions,
    bench_config,
    git_commit,
    machine,
    produce_timed,
    write_files,
)
from fusion.bench.generator import Dataset, GenOptions, build_dataset
from fusion.bench.process import PipelineProcess
from fusion.core.config import PipelineConfig
from fusion.core.errors import ExitCode, FusionError
from fusion.core.events import now_iso
from fusion.core.settings import Settings
from fusion.runtime import clients, lag, topology
from fusion.runtime.metrics import percentiles

SAMPLE_SECONDS = 2.0
CDF_POINTS = 200


class SustainError(FusionError):
    """The sustained-load benchmark could not finish a step."""

    exit_code = ExitCode.QUERY_FAILED


@dataclass(frozen=True)
class SustainOptions:
    sources: int = 4
    step_seconds: float = 60.0
    start_rate: float = 100.0  # keys per second
    max_rate: float = 5_000.0
    refine: int = 2  # bisection steps between the last sustained and the first failed rate
    seed: int = 42
    # How long the last keys of a step may take to be enriched once the step's
    # input is sent, before the step counts as not sustained.
    drain_seconds: float = 120.0


@dataclass
class Step:
    keys_per_second: float  # the rate asked for
    sent_keys_per_second: float  # the rate the producer achieved
    keys: int
    enriched: int
    sustained: bool
    why: str
    latency_p50: float | None
    latency_p95: float | None
    latency_p99: float | None
    latency_max: float | None
    requests_per_key: float | None
    backlog_middle: int
    backlog_last: int
    drain_seconds: float
    cdf: list[float] = field(default_factory=list)  # latencies at CDF_POINTS quantiles


def run_sustain(
    settings: Settings, options: SustainOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Search the highest sustained rate; measure 25 % and 50 % of it; the report."""
    tag = uuid.uuid4().hex[:6]
    config = bench_config(settings, "batched", BenchOptions(1, options.sources), f"s{tag}")
    topology.delete_all(config)
    pipeline.prepare(config)
    workdir = Path(tempfile.mkdtemp(prefix="fusion-sustain-"))
    try:
        with PipelineProcess(config, workdir) as run, EnrichedTimes(config) as enriched:
            run.wait_started()
            meter = StepMeter(config, options, run, enriched)
            on_step("warming up")
            meter.step(options.start_rate / 2, seconds=min(options.step_seconds, 20))
            search = _search(meter, options, on_step)
            best = max((s for s in search if s.sustained), key=lambda s: s.keys_per_second,
                       default=None)  # fmt: skip
            fractions: list[dict[str, Any]] = []
            if best is not None:
                for fraction in (0.25, 0.5):
                    rate = best.keys_per_second * fraction
                    on_step(f"{fraction:.0%} of {best.keys_per_second:,.0f} keys/s")
                    fractions.append({"fraction": fraction, **asdict(meter.step(rate))})
                fractions.append({"fraction": 1.0, **asdict(best)})
            run.stop()
    finally:
        topology.delete_all(config)
    return {
        "kind": "sustain",
        "sources": options.sources,
        "step_seconds": options.step_seconds,
        "date": now_iso(),
        "commit": git_commit(),
        "spark_master": settings.spark.master,
        "max_offsets_per_trigger": config.pipeline.max_offsets_per_trigger,
        "trigger_interval": config.pipeline.trigger_interval,
        "machine": machine(),
        "sustained": _headline(best),
        "search": [{k: v for k, v in asdict(s).items() if k != "cdf"} for s in search],
        "at_fraction": fractions,
    }


def _headline(best: Step | None) -> dict[str, Any] | None:
    if best is None:
        return None
    return {
        "keys_per_second": best.keys_per_second,
        "latency_p50": best.latency_p50,
        "latency_p95": best.latency_p95,
        "latency_p99": best.latency_p99,
        "requests_per_key": best.requests_per_key,
    }


def _search(
    meter: StepMeter, options: SustainOptions, on_step: Callable[[str], None]
) -> list[Step]:
    steps: list[Step] = []
    good: float | None = None
    bad: float | None = None
    rate = options.start_rate
    while rate <= options.max_rate:
        on_step(f"search: {rate:,.0f} keys/s for {options.step_seconds:.0f} s")
        steps.append(meter.step(rate))
        if not steps[-1].sustained:
            bad = rate
            break
        good, rate = rate, rate * 2
    if good is None:
        # Not even the start rate: go down until one is sustained (or give up at 1/8).
        rate = options.start_rate / 2
        while good is None and rate >= options.start_rate / 8:
            on_step(f"search down: {rate:,.0f} keys/s")
            steps.append(meter.step(rate))
            good, bad = (rate, bad) if steps[-1].sustained else (None, rate)
            rate /= 2
    for _ in range(options.refine if good is not None and bad is not None else 0):
        assert good is not None and bad is not None
        rate = round((good + bad) / 2)
        on_step(f"refine: {rate:,.0f} keys/s")
        steps.append(meter.step(rate))
        good, bad = (rate, bad) if steps[-1].sustained else (good, rate)
    return steps


class EnrichedTimes:
    """Reads the enriched topic (``read_committed``) in a thread: key -> its record's timestamp."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.times: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="enriched-times", daemon=True)

    def __enter__(self) -> EnrichedTimes:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def of(self, keys: list[str]) -> dict[str, float]:
        with self._lock:
            return {k: self.times[k] for k in keys if k in self.times}

    def _read(self) -> None:
        consumer = clients.kafka_consumer(self.config.kafka, f"bench-sustain-{uuid.uuid4().hex}")
        topic = self.config.enriched_topic
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        try:
            while not self._stop.is_set():
                for message in consumer.consume(num_messages=5_000, timeout=0.5):
                    key = message.key()
                    if message.error() is not None or key is None:
                        continue
                    _, stamp_ms = message.timestamp()
                    with self._lock:
                        self.times.setdefault(key.decode(), stamp_ms / 1000)
        finally:
            consumer.close()


class StepMeter:
    """Runs one step: fresh keys at a rate, backlog samples, latencies, ES requests."""

    def __init__(
        self,
        config: PipelineConfig,
        options: SustainOptions,
        run: PipelineProcess,
        enriched: EnrichedTimes,
    ) -> None:
        self.config = config
        self.options = options
        self.run = run
        self.enriched = enriched
        self.stages = pipeline.select(config, None).queries(config)
        self.count = 0

    def step(self, rate: float, seconds: float | None = None) -> Step:
        seconds = seconds or self.options.step_seconds
        self.count += 1
        data = steady_dataset(self.config, rate, seconds, self.options.seed + self.count,
                              f"S{self.count}")  # fmt: skip
        keys = list(data.expected)
        before = self._requests()
        samples: list[tuple[float, int]] = []
        sampling = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(samples, sampling), daemon=True)
        sampler.start()
        first, last_send = produce_timed(self.config, data, rate * self.options.sources)
        sent = Sent(rate, keys, first, time.time() - first, last_send)
        sampling.set()
        sampler.join(timeout=30)
        drained, found = self._drain(keys)
        lookups, enriched = (a - b for a, b in zip(self._requests(), before, strict=True))
        seen = Seen(found, samples, drained, lookups, enriched)
        return judge(sent, seen, self.options.sources)

    def _sample(self, samples: list[tuple[float, int]], done: threading.Event) -> None:
        while not done.wait(SAMPLE_SECONDS):
            samples.append((time.time(), lag.behind(self.config, self.stages)))

    def _drain(self, keys: list[str]) -> tuple[float, dict[str, float]]:
        """Wait until every key is enriched and every query committed its input."""
        started = time.monotonic()
        deadline = started + self.options.drain_seconds
        while True:
            self.run.check()
            found = self.enriched.of(keys)
            if self._caught_up(keys):
                return time.monotonic() - started, found
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # Not drained in time: let it finish anyway (up to 10 min), so the next
        # step starts from an empty pipeline; this step counts as not sustained.
        give_up = time.monotonic() + 600
        while not self._caught_up(keys):
            self.run.check()
            if time.monotonic() > give_up:
                raise SustainError(
                    f"the pipeline did not catch up within 10 min after a step at "
                    f"{len(keys)} keys; fix: lower --start-rate or --max-rate"
                )
            time.sleep(1)
        return self.options.drain_seconds, found  # keys found within the drain time

    def _caught_up(self, keys: list[str]) -> bool:
        enriched = len(self.enriched.of(keys)) == len(keys)
        return enriched and lag.behind(self.config, self.stages) == 0

    def _requests(self) -> tuple[int, int]:
        """The enricher's cumulative (lookups, enriched keys) from its last committed marker."""
        marker = lag.stage_markers(self.config, "enricher")["enricher"][0]
        counts = marker.counts if marker is not None else {}
        return counts.get("enricher.es_requests", 0), counts.get("enricher.enriched", 0)


@dataclass(frozen=True)
class Sent:
    """What a step produced: its rate, keys, start, duration and each key's last send time."""

    rate: float
    keys: list[str]
    first: float
    seconds: float
    last_send: dict[str, float]


@dataclass(frozen=True)
class Seen:
    """What the step observed: enriched times, backlog samples, drain time, ES requests."""

    found: dict[str, float]
    samples: list[tuple[float, int]]
    drained: float
    lookups: int
    enriched: int


def judge(sent: Sent, seen: Seen, sources: int) -> Step:
    """The step's latencies and whether the pipeline kept up (see the module docstring)."""
    keys, found, first, seconds = sent.keys, seen.found, sent.first, sent.seconds
    latencies = sorted(found[k] - sent.last_send[k] for k in keys if k in found)
    spread = percentiles(latencies)
    middle = [n for t, n in seen.samples if seconds / 3 <= t - first < 2 * seconds / 3]
    last = [n for t, n in seen.samples if t - first >= 2 * seconds / 3]
    backlog_middle, backlog_last = max(middle, default=0), max(last, default=0)
    slack = 2 * sent.rate * sources  # two seconds of input, in records
    if len(found) < len(keys):
        sustained, why = (
            False,
            f"{len(keys) - len(found)} keys not enriched {seen.drained:.0f} s after",
        )
    elif backlog_last > 1.5 * backlog_middle + slack:
        sustained, why = False, f"backlog grew from {backlog_middle:,} to {backlog_last:,} records"
    else:
        sustained, why = True, "every key enriched, backlog bounded"
    return Step(
        keys_per_second=sent.rate,
        sent_keys_per_second=round(len(keys) / seconds, 1),
        keys=len(keys),
        enriched=len(found),
        sustained=sustained,
        why=why,
        latency_p50=_round(spread["p50"]),
        latency_p95=_round(spread["p95"]),
        latency_p99=_round(spread["p99"]),
        latency_max=_round(latencies[-1]) if latencies else None,
        requests_per_key=round(seen.lookups / seen.enriched, 4) if seen.enriched else None,
        backlog_middle=backlog_middle,
        backlog_last=backlog_last,
        drain_seconds=round(seen.drained, 1),
        cdf=quantiles(latencies, CDF_POINTS),
    )


def quantiles(ordered: list[float], points: int) -> list[float]:
    """``points`` evenly spaced quantiles of an ascending list, for a CDF plot."""
    if not ordered:
        return []
    return [
        round(ordered[min(len(ordered) - 1, i * len(ordered) // points)], 3) for i in range(points)
    ]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def steady_dataset(
    config: PipelineConfig, rate: float, seconds: float, seed: int, prefix: str
) -> Dataset:
    """``rate * seconds`` complete keys; each second's records shuffled among themselves.

    So a key's N records arrive in random order within about a second, as
    from N systems that each publish their part soon after the event.
    """
    keys = max(1, round(rate * seconds))
    options = GenOptions(keys=keys, seed=seed, duplicate_rate=0, missing_rate=0, shuffle=False,
                         key_prefix=prefix)  # fmt: skip
    data = build_dataset(config, options)
    window = max(len(config.sources), round(rate * len(config.sources)))
    rng = random.Random(seed)
    records = data.records
    for start in range(0, len(records), window):
        chunk = records[start : start + window]
        rng.shuffle(chunk)
        records[start : start + window] = chunk
    return data


def markdown(report: dict[str, Any]) -> str:
    machine_ = report["machine"]
    best = report["sustained"]
    lines = [
        f"Sustained load, N = {report['sources']}, steps of {report['step_seconds']:.0f} s, "
        f"{machine_['cores']} cores",
        "",
        f"{report['date']}, commit {report.get('commit') or '?'}, Spark master "
        f"{report['spark_master']}; pyspark {machine_['pyspark']}, Kafka {machine_['kafka']}, "
        f"Elasticsearch {machine_['elasticsearch']}, Python {machine_['python']}",
        "",
    ]
    if best is None:
        lines.append("No rate was sustained, down to 1/8 of the start rate.")
    else:
        lines.append(
            f"**Highest sustained rate: {best['keys_per_second']:,.0f} keys/s** "
            f"({best['keys_per_second'] * report['sources']:,.0f} records/s)"
        )
    lines += [
        "",
        "| step | keys/s asked | sent | keys | p50 s | p95 s | p99 s | max s | lookups/key "
        "| backlog mid → last | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    rows = [("search", s) for s in report["search"]] + [
        (f"{s['fraction']:.0%}", s) for s in report["at_fraction"] if s["fraction"] < 1
    ]
    for label, s in rows:
        lines.append(
            f"| {label} | {s['keys_per_second']:,.0f} | {s['sent_keys_per_second']:,.0f} "
            f"| {s['keys']:,} | {s['latency_p50']} | {s['latency_p95']} | {s['latency_p99']} "
            f"| {s['latency_max']} | {s['requests_per_key']} "
            f"| {s['backlog_middle']:,} → {s['backlog_last']:,} | {s['why']} |"
        )
    return "\n".join(lines) + "\n"


def chart(report: dict[str, Any], path: Path) -> None:
    """Latency CDF at 25/50/100 % of the sustained rate; latency p50/p99 along the search."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for s in report["at_fraction"]:
        if s["cdf"]:
            ys = [(i + 1) / len(s["cdf"]) for i in range(len(s["cdf"]))]
            left.plot(s["cdf"], ys, label=f"{s['keys_per_second']:,.0f} keys/s")
    left.set_xlabel("seconds from a key's last source record to its searchable enriched doc")
    left.set_ylabel("fraction of keys")
    left.set_title("latency CDF")
    left.legend()
    search = sorted(report["search"], key=lambda s: s["keys_per_second"])
    rates = [s["keys_per_second"] for s in search]
    right.plot(rates, [s["latency_p50"] for s in search], marker="o", label="p50")
    right.plot(rates, [s["latency_p99"] for s in search], marker="o", label="p99")
    for s in search:
        if not s["sustained"]:
            right.axvline(s["keys_per_second"], color="red", linestyle=":", linewidth=1)
    right.set_xlabel("keys/s (red: not sustained)")
    right.set_ylabel("latency s")
    right.set_title("latency along the search")
    right.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path, Path]:
    return write_files(out_dir, f"sustain-n{report['sources']}", report, markdown(report), chart)
