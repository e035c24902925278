"""Named counts of what the stages did, for the status line, the summary, the tests and tasks.

One :class:`Metrics` object lives in the driver of ``fusion run`` and adds up
what every task of every query returned (:mod:`fusion.spark.tasks`); each task also
keeps one for its own counts. Latencies are kept as a sketch of at most
:data:`~fusion.observe.sketch.MAX_BINS` bins (counts named
``latency.q<level>_<index>``, :mod:`fusion.observe.sketch`), so they add up
across tasks and processes like any other count, and a quantile comes with
its relative error.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from fusion.observe import sketch
from fusion.observe.names import LATENCY_SKETCH_PREFIX, LATENCY_SUM


class Metrics:
    """Named counters (a latency histogram among them), alerts, and who did the work."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._alerts: dict[str, str] = {}
        self._executors: dict[str, Counter[str]] = defaultdict(Counter)
        self._level = 0  # the latency sketch's level, and its bins
        self._bins = 0

    def add(self, name: str, amount: int = 1) -> None:
        if amount:
            with self._lock:
                self._counts[name] += amount

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Adds the milliseconds the ``with`` block took to ``name``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, round((time.perf_counter() - started) * 1000))

    def set(self, name: str, value: int) -> None:
        """A gauge: the latest value, not a sum."""
        with self._lock:
            self._counts[name] = value

    def add_all(self, counts: Mapping[str, int]) -> None:
        with self._lock:
            self._counts.update({k: v for k, v in counts.items() if v})
            if any(name.startswith(LATENCY_SKETCH_PREFIX) for name in counts):
                self._compact_sketch()

    def add_executor(self, executor: str, name: str, amount: int) -> None:
        """Count ``amount`` of ``name`` as done by ``executor`` (a task-side label)."""
        with self._lock:
            self._executors[executor][name] += amount

    def observe_latency(self, seconds: float) -> None:
        with self._lock:
            name = sketch.bin_name(self._level, sketch.bin_of(seconds, self._level))
            new = name not in self._counts
            self._counts[name] += 1
            self._counts[LATENCY_SUM] += round(max(0.0, seconds) * 1000)
            self._bins += new
            if self._bins > sketch.MAX_BINS:
                self._compact_sketch()

    def _compact_sketch(self) -> None:
        """The latency bins at one level, at most MAX_BINS of them (the lock held)."""
        bins = sketch.compact(sketch.bins_in(self._counts))
        for name in [n for n in self._counts if n.startswith(LATENCY_SKETCH_PREFIX)]:
            del self._counts[name]
        self._counts.update({sketch.bin_name(*where): n for where, n in bins.items()})
        self._level = next(iter(bins))[0] if bins else 0
        self._bins = len(bins)

    def alert(self, name: str, message: str) -> None:
        """Something is wrong right now (e.g. a server unreachable, being retried)."""
        with self._lock:
            self._alerts[name] = message

    def clear_alert(self, name: str) -> None:
        with self._lock:
            self._alerts.pop(name, None)

    def alerts(self) -> dict[str, str]:
        with self._lock:
            return dict(self._alerts)

    def get(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def total(self, suffix: str) -> int:
        """Sum of every counter whose name ends with ``suffix`` (e.g. all sources' ``.dlq``)."""
        with self._lock:
            return sum(v for k, v in self._counts.items() if k.endswith(suffix))

    def executors(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {name: dict(counts) for name, counts in self._executors.items()}

    def snapshot(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "counters": dict(sorted(counts.items())),
            "latency_seconds": sketch.quantiles(counts),
            "alerts": self.alerts(),
            "executors": self.executors(),
        }


def percentiles(ordered: list[float]) -> dict[str, float | None]:
    """p50/p95/p99 of an ascending list (nearest rank); ``None`` when empty."""

    def rank(p: float) -> float | None:
        if not ordered:
            return None
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))]

    return {"p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "count": len(ordered)}
