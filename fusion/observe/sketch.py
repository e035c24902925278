"""Latency quantiles from a sketch with a stated relative error, kept as named counts.

A fixed histogram interpolated within its buckets once reported a p50 of
30.22 s for a burst whose keys all took about 33 s: a value no key had. This
is a log-bucketed sketch (DDSketch, Masson et al., VLDB 2019; its uniform
collapse from UDDSketch, Epicoco et al. 2020): bin ``i`` of level ``L`` holds
the latencies in ``(g^(i-1), g^i]`` with ``g = g0^(2^L)``, and a quantile is
answered with its bin's middle ``2g^i / (g + 1)``, within
``(g - 1) / (g + 1)`` of the latency some key had at that rank (the nearest
rank). Level 0 is 1 %.

Each bin is a count named ``latency.q<L>_<i>`` (:func:`bin_name`), so bins add
up across tasks, drivers and batch markers like any other count. A sketch
with more than :data:`MAX_BINS` bins merges each two neighbours into one, a
level up: the relative error doubles, the bins halve, and a marker keeps a
bounded size (:func:`fusion.kafka.markers.largest_marker`) whatever the
latencies' spread. Counts of different levels are read at the coarsest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from fusion.observe.names import LATENCY_SKETCH_PREFIX

RELATIVE_ERROR = 0.01  # level 0's
GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
# As many bins as the fixed histogram had buckets: a batch marker's size is the same.
MAX_BINS = 28
# Latencies under a millisecond share the millisecond's bin.
SMALLEST_SECONDS = 0.001
QUANTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}

_NAME = re.compile(rf"^{re.escape(LATENCY_SKETCH_PREFIX)}(\d+)_(-?\d+)$")
Bins = dict[tuple[int, int], int]  # (level, index) -> count


def bin_name(level: int, index: int) -> str:
    return f"{LATENCY_SKETCH_PREFIX}{level}_{index}"


def bin_of(seconds: float, level: int = 0) -> int:
    """The index of the level-``level`` bin that ``seconds`` falls in."""
    index = math.ceil(math.log(max(seconds, SMALLEST_SECONDS)) / math.log(GAMMA))
    return _up(index, level)


def _up(index: int, levels: int) -> int:
    """A bin's index ``levels`` levels up: each level merges bins ``2j-1`` and ``2j`` into ``j``."""
    return -((-index) >> levels)  # ceil(index / 2**levels), exact for negative indexes too


def bins_in(counts: Mapping[str, int]) -> Bins:
    """The sketch's bins among ``counts`` (other names ignored)."""
    found: Bins = {}
    for name, count in counts.items():
        if count and name.startswith(LATENCY_SKETCH_PREFIX) and (match := _NAME.match(name)):
            where = (int(match.group(1)), int(match.group(2)))
            found[where] = found.get(where, 0) + count
    return found


def compact(bins: Bins, max_bins: int = MAX_BINS) -> Bins:
    """``bins`` at one level (the coarsest among them), merged up until at most ``max_bins``."""
    if not bins:
        return {}
    level = max(level for level, _ in bins)
    while True:
        merged: Bins = {}
        for (was, index), count in bins.items():
            where = (level, _up(index, level - was))
            merged[where] = merged.get(where, 0) + count
        if len(merged) <= max_bins:
            return merged
        level += 1


def relative_error(level: int) -> float:
    """How far a level's answer may be from the latency some key had, as a fraction of it."""
    gamma = math.pow(GAMMA, 2**level)
    return (gamma - 1) / (gamma + 1)


def quantiles(counts: Mapping[str, int]) -> dict[str, float | None]:
    """p50, p95 and p99 of the sketch in ``counts``, its count and its relative error.

    Nearest rank, as :func:`fusion.observe.metrics.percentiles` over the exact
    values: the answer is within ``relative_error`` of the latency at that rank.
    """
    found = bins_in(counts)
    bins = compact(found, max_bins=len(found))  # at one level, merged no further
    total = sum(bins.values())
    if not total:
        return {**dict.fromkeys(QUANTILES), "count": 0, "relative_error": None}
    level = next(iter(bins))[0]
    gamma = math.pow(GAMMA, 2**level)
    ordered = sorted(bins.items())

    def at(p: float) -> float:
        wanted, seen = max(1, min(total, round(p * total))), 0
        for (_, index), count in ordered:
            seen += count
            if seen >= wanted:
                return float(f"{2 * gamma**index / (gamma + 1):.6g}")
        raise AssertionError("unreachable: the ranks are within the total")

    answers: dict[str, float | None] = {name: at(p) for name, p in QUANTILES.items()}
    return answers | {"count": total, "relative_error": round(relative_error(level), 4)}
