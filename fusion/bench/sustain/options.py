"""The sustained-load benchmark's options: one home, read by its run and its steps."""

from __future__ import annotations

from dataclasses import dataclass

from fusion.bench.sustain.floor import FLOOR_KEYS
from fusion.core import SourceFormat


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
    at_rates: tuple[float, ...] = ()  # steps at fixed rates, reported apart
    # Steps at these fractions of the floor, reported apart (the "p50 at 10 %").
    at_floor: tuple[float, ...] = (0.1,)
    floor_keys: int = FLOOR_KEYS  # keys per floor measurement
    # False: no search for the highest rates, only the steps at_rates and at_floor ask for.
    search: bool = True
    warmup_seconds: float = 120.0  # the JVM compiles Spark's hot code for minutes
    format: SourceFormat = "json"  # "debezium": each record a change event of its row
    # [pipeline] options the benchmark's pipeline takes from the command line (--set), e.g. a
    # lever measured before it becomes a default: (("layout", "stages"),).
    pipeline: tuple[tuple[str, str], ...] = ()
