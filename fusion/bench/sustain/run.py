"""`fusion bench sustain`: the highest steady rate the pipeline keeps up with, and its latency.

One batched pipeline runs in its own process (:class:`PipelineProcess`) for
the whole measurement. Each *step* produces fresh keys at a steady rate for
``step_seconds``: every key's N records, in random order, within about a
second of each other. For each key the latency is

    (the enriched record's Kafka timestamp) - (the send time of its last source record)

and each hop's latency (source record → ack, last ack → ready event, ready
event → enriched record) comes from the records' own Kafka timestamps
(:mod:`.hops`). The enriched record goes out once Elasticsearch
has the enriched document. The benchmark reads the topics, as any
``read_committed`` consumer would, once a step has drained: no consumer of
its own competes with the pipeline for the cores (:mod:`.step`).

Whether a step keeps up, and whether it is sustained (keeps up with its p99
within ``--slo``), is :func:`fusion.bench.meter.judge`'s. The search doubles
the rate from ``start_rate`` while steps keep up, bisects ``refine`` times
between the last rate that kept up and the first that did not, then as often
between the last sustained rate and the first that was not. It reports the
highest sustained rate (with its latency at 25 %, 50 % and 100 % of it), the
highest rate that kept up whatever its latency, and steps at fractions of
the floor and at fixed rates (``at_rates``) for figures quoted at a rate.
Every rate is also a fraction of this machine's floor, measured before the
pipeline starts and after it stops (:mod:`fusion.bench.sustain.floor`), and
each step says where its batches' time went (:func:`~.step.per_batch`).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fusion import pipeline
from fusion.bench import (
    BenchOptions,
    Objective,
    PipelineProcess,
    Step,
    bench_config,
    git_commit,
    machine,
    summary,
)
from fusion.bench.sustain import floor as sustain_floor
from fusion.bench.sustain.floor import Floor
from fusion.bench.sustain.options import SustainOptions
from fusion.bench.sustain.step import StepMeter, spark_phases
from fusion.core import Settings, now_iso
from fusion.ops import teardown
from fusion.topology import topology_of


def run_sustain(
    settings: Settings, options: SustainOptions, on_step: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Search the highest sustained rate; measure fractions of it and fixed rates; the report,
    every rate in it also as a fraction of the floor measured before and after."""
    tag = uuid.uuid4().hex[:6]
    bench = BenchOptions(1, options.sources, format=options.format, pipeline=options.pipeline)
    config = bench_config(settings, "batched", bench, f"s{tag}")
    on_step("the floor, before (bulk from Python, beside the load generator)")
    # Untimed first: a cold node's JIT would make the floor, and so every fraction, flatter.
    # Its rate paces the generator beside the measured floor.
    alone = sustain_floor.measure(settings, config, max(1, options.floor_keys // 4))
    before = sustain_floor.measure(settings, config, options.floor_keys, generator=alone)
    teardown.delete_all(config)
    pipeline.prepare(config)
    workdir = Path(tempfile.mkdtemp(prefix="fusion-sustain-"))
    objective = Objective(slo=options.slo)
    try:
        with PipelineProcess(config, workdir) as run:
            run.wait_started()
            meter = StepMeter(config, options, run, objective)
            on_step("warming up")
            meter.step(options.start_rate, seconds=options.warmup_seconds)
            search = _search(meter, options, on_step) if options.search else []
            best = _highest(search, lambda s: s.sustained)
            fractions = _at_fractions(meter, best, on_step)
            fixed = _at_rates(meter, options, before, on_step)
            phases = spark_phases(run.stop().get("counters", {}))
    finally:
        teardown.delete_all(config)
    on_step("the floor, after")
    # The generator's topics go with it (fusion.bench.setup.generating).
    after = sustain_floor.measure(settings, config, options.floor_keys, generator=before)
    report = {
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
        "layout": topology_of(config).layout,
        "pipeline_set": dict(options.pipeline),
        "machine": machine(settings),
        "sustained": summary(best),
        "kept_up": summary(_highest(search, lambda s: s.kept_up)),
        "search": [{k: v for k, v in asdict(s).items() if k != "cdf"} for s in search],
        "at_fraction": fractions,
        "at_rates": fixed,
        "spark_phases": phases,
    }
    return sustain_floor.with_fractions(report, Floor(before, after, options.floor_keys))


def _at_fractions(
    meter: StepMeter, best: Step | None, on_step: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Steps at 25 % and 50 % of the highest sustained rate, and that rate's own step."""
    if best is None:
        return []
    fractions: list[dict[str, Any]] = []
    for fraction in (0.25, 0.5):
        rate = best.keys_per_second * fraction
        on_step(f"{fraction:.0%} of {best.keys_per_second:,.0f} keys/s")
        fractions.append({"fraction": fraction, **asdict(meter.step(rate))})
    return [*fractions, {"fraction": 1.0, **asdict(best)}]


def _at_rates(
    meter: StepMeter, options: SustainOptions, floor: float, on_step: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Steps at the fixed rates asked for, then at the fractions of the floor (before)."""
    fixed: list[dict[str, Any]] = []
    for rate in options.at_rates:
        on_step(f"fixed rate: {rate:,.0f} keys/s")
        fixed.append({"floor_fraction": None, **asdict(meter.step(rate))})
    for share in options.at_floor:
        rate = round(sustain_floor.shown(floor) * share, 1)
        on_step(f"{sustain_floor.share(share)} of the floor: {rate:,.0f} keys/s")
        fixed.append({"floor_fraction": share, **asdict(meter.step(rate))})
    return fixed


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
