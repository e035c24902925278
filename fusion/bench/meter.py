"""Measuring one step of the sustained-load benchmark: what was sent, what was enriched when.

A step produces at a steady rate for a while; the benchmark samples the
pipeline's backlog as it goes and reads when each of a key's records reached
its topic (:class:`fusion.bench.sustain.hops.TopicTimes`); :func:`judge` tells from
both whether the pipeline kept up, and how fast.

A step **keeps up** when every key was enriched and the backlog (records the
queries still have to read) shows no upward trend over the step's second
half: the least-squares line through its samples there rises by no more than
``flat_seconds`` of input. A pipeline slower than the rate builds backlog
linearly; a faster one holds a bounded backlog, whatever its size. A step is
**sustained** when it keeps up and its p99 latency is within the objective
(``slo``): a pipeline many seconds behind is not keeping anyone's promise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fusion.bench.report import rounded
from fusion.observe import percentiles

SAMPLE_SECONDS = 2.0


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
    """What the step observed: enriched times, backlog samples, drain time, ES requests, hops."""

    found: dict[str, float]
    samples: list[tuple[float, int]]
    drained: float
    lookups: int
    enriched: int
    hops: dict[str, dict[str, float | None]] = field(default_factory=dict)
    stages: dict[str, float] = field(default_factory=dict)  # ms per batch, by stage
    cores: dict[str, float] = field(default_factory=dict)  # busy while sending, by process


@dataclass(frozen=True)
class Objective:
    """What a step must do to count as sustained (see the module docstring)."""

    slo: float = 3.0  # p99 latency objective, seconds
    flat_seconds: float = 3.0  # backlog rise allowed over the second half, in seconds of input


CDF_POINTS = 200


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
    backlog_mean: int  # over the step's second half
    backlog_rise: int  # of the trend line over the second half, records
    drain_seconds: float
    kept_up: bool = False  # every key enriched, no upward trend of the backlog
    hops: dict[str, dict[str, float | None]] = field(default_factory=dict)
    cdf: list[float] = field(default_factory=list)  # latencies at CDF_POINTS quantiles
    # Where a batch's time went: each stage's milliseconds per batch, summed over its tasks.
    stages: dict[str, float] = field(default_factory=dict)
    # Cores each process kept busy while the step's records were sent (the machine's too).
    cores: dict[str, float] = field(default_factory=dict)


def backlog_trend(samples: list[tuple[float, int]]) -> tuple[float, float]:
    """The least-squares slope (records per second) and mean of ``(time, backlog)`` samples."""
    if len(samples) < 2:
        return 0.0, float(samples[0][1]) if samples else 0.0
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_b = sum(b for _, b in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    slope = sum((t - mean_t) * (b - mean_b) for t, b in samples) / spread if spread else 0.0
    return slope, mean_b


def judge(sent: Sent, seen: Seen, sources: int, objective: Objective = Objective()) -> Step:
    """The step's latencies, whether it kept up and whether it was sustained (module docstring)."""
    keys, found, first, seconds = sent.keys, seen.found, sent.first, sent.seconds
    latencies = sorted(found[k] - sent.last_send[k] for k in keys if k in found)
    spread = percentiles(latencies)
    half = [(t, n) for t, n in seen.samples if t - first >= seconds / 2]
    slope, mean = backlog_trend(half)
    rise = slope * seconds / 2
    allowed = objective.flat_seconds * sent.rate * sources  # records
    p99 = spread["p99"]
    kept_up = sustained = False
    if len(found) < len(keys):
        why = f"{len(keys) - len(found)} keys not enriched {seen.drained:.0f} s after"
    elif rise > allowed:
        why = f"backlog rose {rise:,.0f} records over the second half ({slope:,.0f}/s)"
    else:
        kept_up = True
        sustained = p99 is not None and p99 <= objective.slo
        why = (
            "kept up, p99 within the objective"
            if sustained
            else f"kept up, but p99 {p99:.2f} s > objective {objective.slo:g} s"
        )
    return Step(
        keys_per_second=sent.rate,
        sent_keys_per_second=round(len(keys) / seconds, 1),
        keys=len(keys),
        enriched=len(found),
        sustained=sustained,
        why=why,
        latency_p50=rounded(spread["p50"]),
        latency_p95=rounded(spread["p95"]),
        latency_p99=rounded(spread["p99"]),
        latency_max=rounded(latencies[-1]) if latencies else None,
        requests_per_key=round(seen.lookups / seen.enriched, 4) if seen.enriched else None,
        backlog_mean=round(mean),
        backlog_rise=round(rise),
        drain_seconds=round(seen.drained, 1),
        kept_up=kept_up,
        hops=seen.hops,
        cdf=quantiles(latencies, CDF_POINTS),
        stages=seen.stages,
        cores=seen.cores,
    )


def summary(step: Step | None) -> dict[str, Any] | None:
    """A step's headline figures (the report's ``sustained`` and ``kept_up`` objects)."""
    if step is None:
        return None
    return {
        "keys_per_second": step.keys_per_second,
        "latency_p50": step.latency_p50,
        "latency_p95": step.latency_p95,
        "latency_p99": step.latency_p99,
        "requests_per_key": step.requests_per_key,
        "hops": step.hops,
    }


def quantiles(ordered: list[float], points: int) -> list[float]:
    """``points`` evenly spaced quantiles of an ascending list, for a CDF plot."""
    if not ordered:
        return []
    return [
        round(ordered[min(len(ordered) - 1, i * len(ordered) // points)], 3) for i in range(points)
    ]
