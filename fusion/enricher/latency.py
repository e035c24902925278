"""A key's latency: from its last source record to its enriched document's confirmed write.

The start is the Kafka timestamp of the latest record among the parts the
document was built from, a dimension row's included (the indexer keeps each
record's in ``fusion.ts``); the end is the moment Elasticsearch confirmed the
write. Each latency goes into the task's sketch (:mod:`fusion.observe.sketch`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from fusion.core import now_utc
from fusion.observe import Metrics, names


class Written(Protocol):
    @property
    def fired_at(self) -> str: ...

    @property
    def last_record_ms(self) -> int | None: ...


def observe_latencies(metrics: Metrics, written: Iterable[Written], objective: float) -> None:
    """Seconds from each written document's last source record to now, into ``metrics``;
    those over ``objective`` seconds counted apart.

    A document whose parts kept no timestamp (indexed by a Fusion that did not
    keep it) counts from its fire instead.
    """
    done = now_utc()
    done_ms = done.timestamp() * 1000
    over = 0
    for doc in written:
        if doc.last_record_ms is not None:
            seconds = (done_ms - doc.last_record_ms) / 1000
        else:
            seconds = (done - datetime.fromisoformat(doc.fired_at)).total_seconds()
        metrics.observe_latency(seconds)
        over += seconds > objective
    if over:
        metrics.add(names.LATENCY_OVER_OBJECTIVE, over)


def sketch_apart(counts: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """The latency sketch's bins among ``counts``, and the other counts."""
    bins = {n: v for n, v in counts.items() if n.startswith(names.LATENCY_SKETCH_PREFIX)}
    return bins, {n: v for n, v in counts.items() if n not in bins}
