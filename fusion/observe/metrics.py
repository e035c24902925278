"""Named counts of what the stages did, for the status line, the summary, the tests and tasks.

One :class:`Metrics` object lives in the driver of ``fusion run`` and adds up
what every task of every query returned (:mod:`fusion.spark.tasks`); each task also
keeps one for its own counts. Latencies are kept as a histogram (counts per
bucket, named ``latency.le_<seconds>``), so they add up across tasks and
processes like any other count.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from fusion.observe.names import LATENCY_PREFIX, LATENCY_SUM

# Upper bounds (seconds) of the latency buckets; the last catches everything.
# Fine below a few seconds, where a real-time pipeline's latencies are; every
# earlier bound is kept, so counts committed by an older Fusion still fit.
LATENCY_BUCKETS = (
    0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0,
    2.5, 3.0, 4.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0, float("inf"),
)  # fmt: skip
# The latencies' sum in milliseconds, for Prometheus's histogram ``_sum``.


def latency_bucket(seconds: float) -> str:
    """The counter name of the bucket ``seconds`` falls into."""
    bound = LATENCY_BUCKETS[bisect.bisect_left(LATENCY_BUCKETS, seconds)]
    return f"{LATENCY_PREFIX}{bound:g}"


class Metrics:
    """Named counters (a latency histogram among them), alerts, and who did the work."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._alerts: dict[str, str] = {}
        self._executors: dict[str, Counter[str]] = defaultdict(Counter)

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

    def add_executor(self, executor: str, name: str, amount: int) -> None:
        """Count ``amount`` of ``name`` as done by ``executor`` (a task-side label)."""
        with self._lock:
            self._executors[executor][name] += amount

    def observe_latency(self, seconds: float) -> None:
        with self._lock:
            self._counts[latency_bucket(seconds)] += 1
            self._counts[LATENCY_SUM] += round(max(0.0, seconds) * 1000)

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
            "latency_seconds": histogram_percentiles(counts),
            "alerts": self.alerts(),
            "executors": self.executors(),
        }


def histogram_percentiles(counts: Mapping[str, int]) -> dict[str, float | None]:
    """p50/p95/p99 estimated from the latency buckets in ``counts``.

    As Prometheus's ``histogram_quantile`` does: the rank's bucket is found,
    and the latencies in it are taken as spread evenly between its bounds
    (the first bucket's lower bound is 0). A rank in the open last bucket
    gives the highest finite bound: "at least this".
    """
    found = {
        float(name.removeprefix(LATENCY_PREFIX)): value
        for name, value in counts.items()
        if name.startswith(LATENCY_PREFIX)
    }
    # Every bound, the empty ones too: a bucket's lower bound is the bound before it.
    buckets = sorted((bound, found.get(bound, 0)) for bound in set(LATENCY_BUCKETS) | set(found))
    total = sum(value for _, value in buckets)

    def rank(p: float) -> float | None:
        if not total:
            return None
        wanted, seen, lower = p * total, 0, 0.0
        for bound, value in buckets:
            if value and seen + value >= wanted:
                if bound == float("inf"):
                    return lower
                return round(lower + (bound - lower) * (wanted - seen) / value, 3)
            seen += value
            lower = bound
        return lower

    return {"p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "count": total}


def percentiles(ordered: list[float]) -> dict[str, float | None]:
    """p50/p95/p99 of an ascending list (nearest rank); ``None`` when empty."""

    def rank(p: float) -> float | None:
        if not ordered:
            return None
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))]

    return {"p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "count": len(ordered)}
