"""In-process counters of what each stage did, for the status line, the summary and tests.

The foreachBatch handlers of all queries run in the driver's Python process,
so one thread-safe :class:`Metrics` object sees every stage.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any


class Metrics:
    """Named counters plus a bounded sample of enrichment latencies (seconds)."""

    MAX_SAMPLES = 200_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._latencies: list[float] = []
        self._alerts: dict[str, str] = {}

    def add(self, name: str, amount: int = 1) -> None:
        if amount:
            with self._lock:
                self._counts[name] += amount

    def observe_latency(self, seconds: float) -> None:
        with self._lock:
            if len(self._latencies) < self.MAX_SAMPLES:
                self._latencies.append(seconds)

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

    def total(self, suffix: str) -> int:
        """Sum of every counter whose name ends with ``suffix`` (e.g. all sources' ``.dlq``)."""
        with self._lock:
            return sum(v for k, v in self._counts.items() if k.endswith(suffix))

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            latencies = sorted(self._latencies)
            counts = dict(sorted(self._counts.items()))
            alerts = dict(self._alerts)
        return {
            "counters": counts,
            "latency_seconds": percentiles(latencies),
            "alerts": alerts,
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.snapshot(), indent=2))
        tmp.replace(path)


def percentiles(ordered: list[float]) -> dict[str, float | None]:
    """p50/p95/p99 of an ascending list (nearest rank); ``None`` when empty."""

    def rank(p: float) -> float | None:
        if not ordered:
            return None
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))]

    return {"p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "count": len(ordered)}
