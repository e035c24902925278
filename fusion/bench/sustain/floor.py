"""The sustained-load benchmark's yardstick: this machine's own floor, measured in the same run.

A rate in keys/s does not travel: a second machine of the same kind, whose
Elasticsearch indexed half as fast, sustained half the keys/s with nothing
regressed (docs/benchmark.md). So each run measures how fast this machine
bulk-indexes N + 1 documents per key (a key's N source documents and its
enriched one) straight from Python into the same Elasticsearch, no Kafka and
no Spark (:func:`fusion.bench.baselines.run_floor`), before the pipeline
starts and again once it has stopped, and reports every rate also as a
fraction of it. Pure but for :func:`measure`.

The floor is measured under the same load generator as the steps: while
Python bulk-indexes, the benchmark's producer sends keys to the pipeline's
source topics at the floor's own rate (that of an untimed measurement just
before), so the producer's cores count against the floor as they count
against the pipeline (:func:`fusion.bench.setup.generating`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fusion.bench import GenOptions, build_dataset, generating, run_floor
from fusion.core import PipelineConfig, Settings

# Keys per floor measurement: 100,000 documents at N = 4, a few seconds here; enough
# that the bulk's own start is no part of the rate.
FLOOR_KEYS = 20_000


@dataclass(frozen=True)
class Floor:
    """The floor, keys/s, measured before the pipeline started and after it stopped."""

    before: float
    after: float
    keys: int = FLOOR_KEYS  # keys per measurement

    @property
    def keys_per_second(self) -> float:
        """What rates are fractions of: the two measurements' mean (the machine drifts
        during a run; both are in the report)."""
        return (self.before + self.after) / 2


def shown(keys_per_second: float) -> float:
    """A floor as the report writes it; rates and fractions derive from this figure, so a
    reader can check each of them against the report."""
    return round(keys_per_second, 1)


def measure(
    settings: Settings, config: PipelineConfig, keys: int = FLOOR_KEYS, generator: float = 0
) -> float:
    """Keys/s at which this machine bulk-indexes ``keys`` keys' N + 1 documents from Python;
    with ``generator`` > 0, while the load generator sends keys at that rate (keys/s)."""
    options = GenOptions(keys=keys, duplicate_rate=0, missing_rate=0, key_prefix="F")
    rows = as_rows(config)
    indexed = build_dataset(rows, options)
    if generator <= 0:
        return keys / run_floor(settings, indexed, rows)
    # More keys than the floor's: the generator still sends when the bulk ends.
    sent = build_dataset(config, GenOptions(keys=keys * 2, duplicate_rate=0, missing_rate=0,
                                            key_prefix="G"))  # fmt: skip
    with generating(config, sent, generator * len(config.sources)):
        return keys / run_floor(settings, indexed, rows)


def as_rows(config: PipelineConfig) -> PipelineConfig:
    """``config`` with every source read as plain JSON rows. The floor indexes the rows
    whatever the sources' format, so that a change event's envelope or an Avro body
    (which Python cannot index as it is) is measured against the same yardstick."""
    sources = [source.model_copy(update={"format": "json"}) for source in config.sources]
    return config.model_copy(update={"sources": sources})


def share(value: float) -> str:
    """A fraction of the floor as the reports write it: ``10 %``, ``0.2 %``."""
    return f"{value * 100:g} %"


def fraction(rate: float | None, floor: Floor) -> float | None:
    return None if rate is None else round(rate / shown(floor.keys_per_second), 3)


def with_fractions(report: dict[str, Any], floor: Floor) -> dict[str, Any]:
    """``report`` with its floor, and each step's and headline's rate as a fraction of it."""
    out = dict(report)
    out["floor"] = {
        "keys_per_second_before": shown(floor.before),
        "keys_per_second_after": shown(floor.after),
        "keys_per_second": shown(floor.keys_per_second),
        "keys": floor.keys,
        "beside_generator": True,
    }
    for name in ("search", "at_fraction", "at_rates"):
        out[name] = [_fractioned(step, floor) for step in report.get(name, [])]
    for name in ("sustained", "kept_up"):
        out[name] = None if report.get(name) is None else _fractioned(report[name], floor)
    return out


def _fractioned(step: dict[str, Any], floor: Floor) -> dict[str, Any]:
    return step | {"fraction_of_floor": fraction(step["keys_per_second"], floor)}


def median_of_runs(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The headline figures of several runs, each the median over the runs: the sustained
    and kept-up rates as fractions of their own run's floor, and the latency at the
    fixed fraction of the floor (the issue's "p50 at 10 % of the floor")."""

    def median(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(statistics.median(present), 3) if present else None

    def headline(report: dict[str, Any], name: str, field: str) -> float | None:
        return None if report.get(name) is None else report[name][field]

    def floor_step(report: dict[str, Any], field: str) -> float | None:
        steps = [s for s in report.get("at_rates", []) if s.get("floor_fraction") is not None]
        return steps[0][field] if steps else None

    return {
        "runs": len(reports),
        "floor_keys_per_second": median([r["floor"]["keys_per_second"] for r in reports]),
        "sustained_fraction": median(
            [headline(r, "sustained", "fraction_of_floor") for r in reports]
        ),
        "sustained_keys_per_second": median(
            [headline(r, "sustained", "keys_per_second") for r in reports]
        ),
        "kept_up_fraction": median([headline(r, "kept_up", "fraction_of_floor") for r in reports]),
        "kept_up_keys_per_second": median(
            [headline(r, "kept_up", "keys_per_second") for r in reports]
        ),
        "floor_step_fraction": median([floor_step(r, "floor_fraction") for r in reports]),
        "floor_step_p50": median([floor_step(r, "latency_p50") for r in reports]),
        "floor_step_p99": median([floor_step(r, "latency_p99") for r in reports]),
    }
