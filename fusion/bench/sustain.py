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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fusion import pipeline
from fusion.bench.burst import (
    BenchOptions,
    bench_config,
    produce_timed,
)
from fusion.bench.errors import SustainError
from fusion.bench.generator import Dataset, GenOptions, build_dataset
from fusion.bench.meter import (
    SAMPLE_SECONDS,
    EnrichedTimes,
    Seen,
    Sent,
    Step,
    judge,
)
from fusion.bench.process import PipelineProcess
from fusion.bench.report import git_commit, machine
from fusion.core.config import PipelineConfig
from fusion.core.events import now_iso
from fusion.core.settings import Settings
from fusion.runtime import lag, topology
from fusion.runtime.figures import Figures


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
        figures = Figures(marker.counts if marker is not None else {})
        return figures.lookups, figures.enriched
