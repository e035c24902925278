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

from fusion.observe import names, sketch


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
        return SourceFigures(
            records=self._get(names.source_count(name, names.SOURCE_RECORDS)),
            indexed=self._get(names.source_count(name, names.SOURCE_INDEXED)),
            acks=self._get(names.source_count(name, names.SOURCE_ACKS)),
            dead_letters=self._get(names.source_count(name, names.DLQ)),
            bulk_requests=self._get(names.source_count(name, names.SOURCE_BULK_REQUESTS)),
            lost=self._get(names.source_count(name, names.SOURCE_LOST)),
            lost_by_partition={
                int(k.rsplit("@", 1)[1]): int(v)
                for k, v in self.counts.items()
                if k.startswith(names.lost_in_partition(name, 0)[:-1])
            },
        )

    @property
    def lost(self) -> int:
        """Source records deleted before they were read, every source's."""
        return self._total(f".{names.SOURCE_LOST}")

    @property
    def indexed(self) -> int:
        return self._total(f".{names.SOURCE_INDEXED}")

    @property
    def acks(self) -> int:
        return self._total(f".{names.SOURCE_ACKS}")

    @property
    def dead_letters(self) -> int:
        """Every stage's dead letters."""
        return self._total(f".{names.DLQ}")

    def query_dead_letters(self, query: str) -> int:
        """One query's (``indexer-<source>``, ``counter``, ``enricher``, or a benchmark's)."""
        return self._get(f"{query.replace('-', '.', 1)}.{names.DLQ}")

    @property
    def keys_seen(self) -> int:
        return self._get(names.COUNTER_KEYS)

    @property
    def fired(self) -> int:
        return self._get(names.COUNTER_FIRED)

    @property
    def incomplete(self) -> int:
        return self._get(names.COUNTER_INCOMPLETE)

    @property
    def updated(self) -> int:
        return self._get(names.COUNTER_UPDATED)

    @property
    def children_fetched(self) -> int:
        """Children rows the enrichment's searches found (docs/children.md)."""
        return self._get(names.ENRICHER_CHILDREN)

    @property
    def arrays_truncated(self) -> int:
        """Children arrays cut at ``max_children`` or ``max_children_bytes``."""
        return self._get(names.ENRICHER_TRUNCATED)

    @property
    def fanout_keys(self) -> int:
        """Slot acks the dimensions' fan-outs published: keys told of a row's change."""
        return self._get(names.FANOUT_KEYS)

    @property
    def fanouts_pending(self) -> int:
        """Fan-out requests on the fan-out topic not worked yet: asked or continued, not read."""
        made = self._get(names.FANOUT_ASKED) + self._get(names.FANOUT_CONTINUED)
        return max(0, made - self._get(names.FANOUT_REQUESTS))

    @property
    def fanout_searches(self) -> int:
        """Fan-out requests worked: a page of searches each."""
        return self._get(names.FANOUT_REQUESTS)

    @property
    def fanouts_done(self) -> int:
        return self._get(names.FANOUT_DONE)

    @property
    def counter_dead_letters(self) -> int:
        return self._get(names.COUNTER_DLQ)

    @property
    def pending_keys(self) -> int:
        """Keys seen but neither fired nor reported incomplete.

        A key reported incomplete and fired later by a late source is in both
        counts; ``counter.fired_late`` counts it back once.
        """
        return max(
            0, self.keys_seen - self.fired - self.incomplete + self._get(names.COUNTER_FIRED_LATE)
        )

    @property
    def state_keys(self) -> int:
        """Rows in the counter's state: the counter query's, or the single query's."""
        return self._get(names.state_rows("counter")) + self._get(names.state_rows("single"))

    @property
    def ready(self) -> int:
        return self._get(names.ENRICHER_READY)

    @property
    def enriched(self) -> int:
        """Enriched documents Elasticsearch confirmed: first ones, updates and partial ones."""
        return self._get(names.ENRICHER_ENRICHED)

    @property
    def enriched_updates(self) -> int:
        return self._get(names.ENRICHER_UPDATED)

    @property
    def enriched_partial(self) -> int:
        return self._get(names.ENRICHER_PARTIAL)

    @property
    def enricher_dead_letters(self) -> int:
        return self._get(names.ENRICHER_DLQ)

    @property
    def lookups(self) -> int:
        """The enricher's lookup requests: GETs or ``_mget``s."""
        return self._get(names.ENRICHER_ES_REQUESTS)

    @property
    def enricher_bulk_requests(self) -> int:
        return self._get(names.ENRICHER_BULK_REQUESTS)

    @property
    def bulk_requests(self) -> int:
        """Every stage's bulk writes (source and enriched documents)."""
        return self._total(names.SOURCE_BULK_REQUESTS)

    @property
    def docs_fetched(self) -> int:
        return self._get(names.ENRICHER_DOCS_FETCHED)

    def driver_peak_mb(self, process: str) -> int | None:
        """The driver's peak memory (``python`` or ``jvm``), if it reported one."""
        value = self.counts.get(names.driver_peak_mb(process))
        return None if value is None else int(value)

    def first_batch(self, query: str) -> tuple[int, float]:
        """Rows and seconds of the query's first batch that read rows (a cold JVM's)."""
        return self._get(names.first_input(query)), self._get(names.first_busy_ms(query)) / 1000

    def first_batch_at(self, *queries: str) -> float | None:
        """When the first batch that read rows of any of ``queries`` started (epoch s), if one
        did: where a backlog's drain begins, past the process's and the queries' start."""
        started = [self._get(names.first_batch_at_ms(query)) for query in queries]
        return min((ms / 1000 for ms in started if ms), default=None)

    @property
    def es_retries(self) -> int:
        return self._get(names.ES_RETRIES)

    def input_records(self, query: str) -> int:
        """Rows the query's batches read (Spark's own count)."""
        return self._get(names.query_input(query))

    def batch_seconds(self, query: str) -> float:
        """Time the query spent in batches that read rows."""
        return self._get(names.query_busy_ms(query)) / 1000

    def running(self, query: str) -> bool:
        """Whether Spark reports the query started and not yet ended."""
        return self._get(names.query_running(query)) == 1

    def batches(self, query: str) -> int:
        """The query's batches that read rows."""
        return self._get(names.query_batches(query))

    def phase_seconds(self, query: str) -> dict[str, float]:
        """Time the query's batches that read rows spent in each of Spark's phases."""
        prefix = names.query_phase_ms(query, "")
        return {k.removeprefix(prefix): v / 1000 for k, v in self.counts.items()
                if k.startswith(prefix)}  # fmt: skip

    def stage_seconds(self) -> dict[str, float]:
        """Time the tasks spent in each stage (:data:`names.STAGES`), summed over tasks."""
        return {name.removeprefix("ms."): self._get(name) / 1000 for name in names.STAGES}

    @property
    def es_rejected(self) -> int:
        return self._get(names.ES_REJECTED)

    def latency(self) -> dict[str, float | None]:
        """Last source record → enriched: p50/p95/p99, count, relative error (:mod:`..sketch`)."""
        return sketch.quantiles(self.counts)

    @property
    def latency_sum_seconds(self) -> float:
        return self._get(names.LATENCY_SUM) / 1000

    @property
    def latency_over_objective(self) -> int:
        return self._get(names.LATENCY_OVER_OBJECTIVE)

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
        if self.fanout_keys or self.fanouts_pending:
            parts.append(f"fan-outs pending {self.fanouts_pending:,}")
            parts.append(f"keys told {self.fanout_keys:,}")
        parts += [
            f"enriched {self.enriched:,}",
            f"dlq {self.dead_letters:,}",
            f"ES lookups {self.lookups:,}",
        ]
        if (spread := self.latency())["p50"] is not None:
            parts.append(f"last record→enriched {latency_text(spread)}")
        return "  ".join([*(f"[{message}]" for message in alerts.values()), "  ".join(parts)])


def latency_text(spread: Mapping[str, float | None]) -> str:
    """``p50 0.91 s p99 1.52 s (±1 %)``: the quantiles with the sketch's relative error."""
    error = spread["relative_error"] or 0.0
    return f"p50 {spread['p50']:.2f} s p99 {spread['p99']:.2f} s (±{error * 100:.2g} %)"
