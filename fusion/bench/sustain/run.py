"""`fusion bench --sustain`: the highest steady rate the pipeline keeps up with, and its latency.

One batched pipeline runs in its own process (:class:`PipelineProcess`) for
the whole measurement. Each *step* produces fresh keys at a steady rate for
``step_seconds``: every key's N records, in random order, within about a
second of each other. For each key the latency is

    (the enriched record's Kafka timestamp) - (the send time of its last source record)

and each hop's latency (source record → ack, last ack → ready event, ready
event → enriched record) comes from the records' own Kafka timestamps
(:mod:`fusion.bench.hops`). The enriched record goes out once Elasticsearch
has the enriched document; the benchmark reads the topics as any
``read_committed`` consumer would.

Whether a step keeps up, and whether it is sustained (keeps up with its p99
within ``--slo``), is :func:`fusion.bench.meter.judge`'s. The search doubles
the rate from ``start_rate`` while steps keep up, bisects ``refine`` times
between the last rate that kept up and the first that did not, then as often
between the last sustained rate and the first that was not. It reports the
highest sustained rate (with its latency at 25 %, 50 % and 100 % of it), the
highest rate that kept up whatever its latency, and steps at fixed rates
(``at_rates``) for figures that are quoted at a given rate.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fusion import pipeline
from fusion.bench.errors import SustainError
from fusion.bench.generator import Dataset, GenOptions, build_dataset
from fusion.bench.hops import TopicTimes, hop_summary
from fusion.bench.meter import SAMPLE_SECONDS, Objective, Seen, Sent, Step, judge, summary
from fusion.bench.process import PipelineProcess
from fusion.bench.report import git_commit, machine
from fusion.bench.runs.burst import BenchOptions, bench_config, produce_timed
from fusion.core.config import PipelineConfig
from fusion.core.config_values import SourceFormat
from fusion.core.events import now_iso
from fusion.core.settings import Settings
from fusion.kafka import lag
from fusion.observe.figures import Figures
from fusion.ops import teardown


@dataclass(frozen=True)
class SustainOptions:
    sources: int = 4
    step_seconds: float = 60.0
    start_rate: float = 100.0  # keys per second
    max_rate: float = 5_000.0
    refine: int = 2  # bisection steps at each boundary (keeping up, the objective)
    seed: int = 42
    # How long the last keys of a step may take to be enriched once the step's
    # input is sent, before the step counts as not keeping up.
    drain_seconds: float = 120.0
    slo: float = 3.0  # p99 latency objective, seconds
    at_rates: tuple[float, ...] = (250.0,)  # steps at fixed rates, reported apart
    warmup_seconds: float = 120.0  # the JVM compiles Spark's hot code for minutes
    format: SourceFormat = "json"  # "debezium": each record a change event of its row


def run_sustain(
    settings: Settings, options: SustainOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Search the highest sustained rate; measure fractions of it and fixed rates; the report."""
    tag = uuid.uuid4().hex[:6]
    bench = BenchOptions(1, options.sources, format=options.format)
    config = bench_config(settings, "batched", bench, f"s{tag}")
    teardown.delete_all(config)
    pipeline.prepare(config)
    workdir = Path(tempfile.mkdtemp(prefix="fusion-sustain-"))
    objective = Objective(slo=options.slo)
    try:
        with PipelineProcess(config, workdir) as run, TopicTimes(config) as times:
            run.wait_started()
            meter = StepMeter(config, options, run, times, objective)
            on_step("warming up")
            meter.step(options.start_rate, seconds=options.warmup_seconds)
            search = _search(meter, options, on_step)
            best = _highest(search, lambda s: s.sustained)
            fractions: list[dict[str, Any]] = []
            if best is not None:
                for fraction in (0.25, 0.5):
                    rate = best.keys_per_second * fraction
                    on_step(f"{fraction:.0%} of {best.keys_per_second:,.0f} keys/s")
                    fractions.append({"fraction": fraction, **asdict(meter.step(rate))})
                fractions.append({"fraction": 1.0, **asdict(best)})
            fixed = []
            for rate in options.at_rates:
                on_step(f"fixed rate: {rate:,.0f} keys/s")
                fixed.append(asdict(meter.step(rate)))
            run.stop()
    finally:
        teardown.delete_all(config)
    return {
        "kind": "sustain",
        "sources": options.sources,
        "step_seconds": options.step_seconds,
        "slo_seconds": options.slo,
        "date": now_iso(),
        "commit": git_commit(),
        "spark_master": settings.spark.master,
        "max_offsets_per_trigger": config.pipeline.max_offsets_per_trigger,
        "trigger_interval": config.pipeline.trigger_interval,
        "refresh_interval": config.pipeline.refresh_interval,
        "machine": machine(settings),
        "sustained": summary(best),
        "kept_up": summary(_highest(search, lambda s: s.kept_up)),
        "search": [{k: v for k, v in asdict(s).items() if k != "cdf"} for s in search],
        "at_fraction": fractions,
        "at_rates": fixed,
    }


def _highest(steps: list[Step], good: Callable[[Step], bool]) -> Step | None:
    return max((s for s in steps if good(s)), key=lambda s: s.keys_per_second, default=None)


def _search(
    meter: StepMeter, options: SustainOptions, on_step: Callable[[str], None]
) -> list[Step]:
    steps: list[Step] = []
    rate = options.start_rate
    while rate <= options.max_rate:
        on_step(f"search: {rate:,.0f} keys/s for {options.step_seconds:.0f} s")
        steps.append(meter.step(rate))
        if not steps[-1].kept_up:
            break
        rate *= 2
    for name, good in (("keeping up", _kept_up), ("the objective", _sustained)):
        _down(meter, steps, good, options, on_step, name)
        _refine(meter, steps, good, options.refine, on_step, name)
    return steps


def _kept_up(step: Step) -> bool:
    return step.kept_up


def _sustained(step: Step) -> bool:
    return step.sustained


def _down(
    meter: StepMeter,
    steps: list[Step],
    good: Callable[[Step], bool],
    options: SustainOptions,
    on_step: Callable[[str], None],
    name: str,
) -> None:
    """No step good yet: halve the lowest rate until one is (or give up at 1/8 of the start)."""
    rate = min(s.keys_per_second for s in steps) / 2
    while not any(good(s) for s in steps) and rate >= options.start_rate / 8:
        on_step(f"search down for {name}: {rate:,.0f} keys/s")
        steps.append(meter.step(rate))
        rate /= 2


def _refine(
    meter: StepMeter,
    steps: list[Step],
    good: Callable[[Step], bool],
    times: int,
    on_step: Callable[[str], None],
    name: str,
) -> None:
    """Bisect between the highest good rate and the lowest bad one above it."""
    for _ in range(times):
        best = _highest(steps, good)
        if best is None:
            return
        above = [s.keys_per_second for s in steps if not good(s)]
        above = [r for r in above if r > best.keys_per_second]
        if not above:
            return
        rate = round((best.keys_per_second + min(above)) / 2)
        if rate in (best.keys_per_second, min(above)):
            return
        on_step(f"refine {name}: {rate:,.0f} keys/s")
        steps.append(meter.step(rate))


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


class StepMeter:
    """Runs one step: fresh keys at a rate, backlog samples, latencies per key and hop."""

    def __init__(
        self,
        config: PipelineConfig,
        options: SustainOptions,
        run: PipelineProcess,
        times: TopicTimes,
        objective: Objective,
    ) -> None:
        self.config = config
        self.options = options
        self.run = run
        self.times = times
        self.objective = objective
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
        hops = hop_summary(self.times.of(key) for key in keys)
        seen = Seen(found, samples, drained, lookups, enriched, hops)
        return judge(sent, seen, self.options.sources, self.objective)

    def _sample(self, samples: list[tuple[float, int]], done: threading.Event) -> None:
        while not done.wait(SAMPLE_SECONDS):
            samples.append((time.time(), lag.behind(self.config, self.stages)))

    def _drain(self, keys: list[str]) -> tuple[float, dict[str, float]]:
        """Wait until every key is enriched and every query committed its input."""
        started = time.monotonic()
        deadline = started + self.options.drain_seconds
        while True:
            self.run.check()
            if self._caught_up(keys):
                # Read after the check: a key enriched in between counts.
                return time.monotonic() - started, self.times.enriched(keys)
            found = self.times.enriched(keys)
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # Not drained in time: let it finish anyway (up to 10 min), so the next
        # step starts from an empty pipeline; this step counts as not keeping up.
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
        enriched = len(self.times.enriched(keys)) == len(keys)
        return enriched and lag.behind(self.config, self.stages) == 0

    def _requests(self) -> tuple[int, int]:
        """The pipeline's cumulative (lookups, enriched keys), from its stages' last markers."""
        counts: dict[str, int] = {}
        for marker, _ in lag.stage_markers(self.config, self.stages).values():
            for name, value in (marker.counts if marker is not None else {}).items():
                counts[name] = counts.get(name, 0) + value
        figures = Figures(counts)
        return figures.lookups, figures.enriched
