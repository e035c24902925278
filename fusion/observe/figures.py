"""The pipeline's figures, read from its counters: the one place that knows their names.

Tasks and queries count under dotted names (``indexer.<source>.acks``,
``counter.fired``, ``enricher.es_requests``, ...). The status line, the
end-of-run summary, ``fusion status``, the demo's report, the Prometheus
endpoint and the benchmark all read them through :class:`Figures`, so a
figure means the same wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fusion.observe.metrics import (
    LATENCY_BUCKETS,
    LATENCY_SUM,
    histogram_percentiles,
    latency_bucket,
)


@dataclass(frozen=True)
class SourceFigures:
    """What one source's indexer did."""

    records: int  # read from the topic
    indexed: int  # confirmed by Elasticsearch
    acks: int  # published for confirmed documents
    dead_letters: int
    bulk_requests: int
    lost: int = 0  # deleted from the topic before they were read (fusion.kafka.data_loss)
    lost_by_partition: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Figures:
    """Named figures over a mapping of counter name to count (a run's, or the markers' sum)."""

    counts: Mapping[str, int]

    def _get(self, name: str) -> int:
        return int(self.counts.get(name, 0))

    def _total(self, suffix: str) -> int:
        return sum(int(v) for k, v in self.counts.items() if k.endswith(suffix))

    def source(self, name: str) -> SourceFigures:
        prefix = f"indexer.{name}."
        return SourceFigures(
            records=self._get(prefix + "records"),
            indexed=self._get(prefix + "indexed"),
            acks=self._get(prefix + "acks"),
            dead_letters=self._get(prefix + "dlq"),
            bulk_requests=self._get(prefix + "bulk_requests"),
            lost=self._get(prefix + "lost"),
            lost_by_partition={
                int(k.rsplit("@", 1)[1]): int(v)
                for k, v in self.counts.items()
                if k.startswith(prefix + "lost@")
            },
        )

    @property
    def lost(self) -> int:
        """Source records deleted before they were read, every source's."""
        return self._total(".lost")

    @property
    def indexed(self) -> int:
        return self._total(".indexed")

    @property
    def acks(self) -> int:
        return self._total(".acks")

    @property
    def dead_letters(self) -> int:
        """Every stage's dead letters."""
        return self._total(".dlq")

    def query_dead_letters(self, query: str) -> int:
        """One query's (``indexer-<source>``, ``counter``, ``enricher``, ``naive``)."""
        return self._get(f"{query.replace('-', '.', 1)}.dlq")

    @property
    def keys_seen(self) -> int:
        return self._get("counter.keys")

    @property
    def fired(self) -> int:
        return self._get("counter.fired")

    @property
    def incomplete(self) -> int:
        return self._get("counter.incomplete")

    @property
    def updated(self) -> int:
        return self._get("counter.updated")

    @property
    def counter_dead_letters(self) -> int:
        return self._get("counter.dlq")

    @property
    def pending_keys(self) -> int:
        """Keys seen but neither fired nor reported incomplete.

        A key reported incomplete and fired later by a late source is in both
        counts; ``counter.fired_late`` counts it back once.
        """
        return max(
            0, self.keys_seen - self.fired - self.incomplete + self._get("counter.fired_late")
        )

    @property
    def state_keys(self) -> int:
        return self._get("state.counter.rows")

    @property
    def ready(self) -> int:
        return self._get("enricher.ready")

    @property
    def enriched(self) -> int:
        """Enriched documents Elasticsearch confirmed: first ones, updates and partial ones."""
        return self._get("enricher.enriched")

    @property
    def enriched_updates(self) -> int:
        return self._get("enricher.updated")

    @property
    def enriched_partial(self) -> int:
        return self._get("enricher.partial")

    @property
    def enricher_dead_letters(self) -> int:
        return self._get("enricher.dlq")

    @property
    def lookups(self) -> int:
        """The enricher's (or naive mode's) lookup requests: GETs or ``_mget``s."""
        return self._get("enricher.es_requests")

    @property
    def enricher_bulk_requests(self) -> int:
        return self._get("enricher.bulk_requests")

    @property
    def bulk_requests(self) -> int:
        """Every stage's bulk writes (source and enriched documents)."""
        return self._total("bulk_requests")

    @property
    def wasted_lookups(self) -> int:
        """Naive mode's lookups that found a source missing (the counter's saving)."""
        return self._get("naive.wasted")

    @property
    def docs_fetched(self) -> int:
        return self._get("enricher.docs_fetched")

    def driver_peak_mb(self, process: str) -> int | None:
        """The driver's peak memory (``python`` or ``jvm``), if it reported one."""
        value = self.counts.get(f"driver.{process}_peak_mb")
        return None if value is None else int(value)

    def first_batch(self, query: str) -> tuple[int, float]:
        """Rows and seconds of the query's first batch that read rows (a cold JVM's)."""
        return self._get(f"first_input.{query}"), self._get(f"first_busy_ms.{query}") / 1000

    @property
    def es_retries(self) -> int:
        return self._get("es.retries")

    def input_records(self, query: str) -> int:
        """Rows the query's batches read (Spark's own count)."""
        return self._get(f"input.{query}")

    def batch_seconds(self, query: str) -> float:
        """Time the query spent in batches that read rows."""
        return self._get(f"busy_ms.{query}") / 1000

    def latency_buckets(self) -> list[tuple[float, int]]:
        """Fire-to-enriched latencies per bucket (upper bound in seconds, count), every bucket."""
        return [(bound, self._get(latency_bucket(bound))) for bound in LATENCY_BUCKETS]

    @property
    def latency_sum_seconds(self) -> float:
        return self._get(LATENCY_SUM) / 1000

    @property
    def lookups_per_key(self) -> float | None:
        return round(self.lookups / self.enriched, 4) if self.enriched else None

    def headline(self) -> dict[str, Any]:
        """The figures a run ends with (``fusion run``'s JSON, the demo's report)."""
        return {
            "enriched": self.enriched,
            "fired": self.fired,
            "pending_keys": self.pending_keys,
            "incomplete": self.incomplete,
            "updated": self.updated,
            "dead_letters": self.dead_letters,
            "es_requests": self.lookups,
            "es_requests_per_key": self.lookups_per_key,
        }

    def status_line(self, alerts: Mapping[str, str]) -> str:
        """The live status line; an outage being retried is news, so it goes first."""
        parts = [
            f"indexed {self.indexed:,}",
            f"acks {self.acks:,}",
            f"pending keys {self.pending_keys:,}",
            f"fired {self.fired:,}",
        ]
        # Lifecycle events only show once they happen: most runs have none.
        for name, count in (("incomplete", self.incomplete), ("updated", self.updated)):
            if count:
                parts.append(f"{name} {count:,}")
        if self.lost:
            parts.append(f"lost {self.lost:,}")
        parts += [
            f"enriched {self.enriched:,}",
            f"dlq {self.dead_letters:,}",
            f"ES lookups {self.lookups:,}",
        ]
        spread = histogram_percentiles(self.counts)
        if spread["p50"] is not None:
            parts.append(f"fire→enriched p50 {spread['p50']:.2f} s p99 {spread['p99']:.2f} s")
        return "  ".join([*(f"[{message}]" for message in alerts.values()), "  ".join(parts)])
