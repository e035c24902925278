"""The stages' Prometheus families (:mod:`fusion.ops.prometheus` serves them): each source's
indexer, the counter (and the dimensions' fan-outs it is told by), the enricher."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from fusion.core import PipelineConfig
from fusion.observe import Figures


def stage_families(
    config: PipelineConfig, figures: Figures, queries: list[str]
) -> Iterator[Metric]:
    yield from _indexers(config, figures)
    yield from _counter(figures)
    yield from _enricher(figures)
    yield from _time_spent(figures, queries)


def _time_spent(figures: Figures, queries: list[str]) -> Iterator[Metric]:
    """Where the batches' time goes: the tasks' stages, and Spark's phases of a batch."""
    stages = CounterMetricFamily(
        "fusion_stage_seconds",
        "Time the tasks spent in each stage, summed over tasks (index.write holds the "
        "refresh=wait_for)",
        labels=["stage"],
    )
    for stage, seconds in figures.stage_seconds().items():
        stages.add_metric([stage], seconds)
    yield stages
    batches = CounterMetricFamily(
        "fusion_batches", "The query's batches that read rows", labels=["query"]
    )
    phases = CounterMetricFamily(
        "fusion_batch_phase_seconds",
        "Time the query's batches that read rows spent in each of Spark's phases",
        labels=["query", "phase"],
    )
    for query in queries:
        batches.add_metric([query], figures.batches(query))
        for phase, seconds in sorted(figures.phase_seconds(query).items()):
            phases.add_metric([query, phase], seconds)
    yield batches
    yield phases


def _indexers(config: PipelineConfig, figures: Figures) -> Iterator[Metric]:
    for what, name, help in (
        ("records", "fusion_source_records", "Source records the indexer read"),
        ("indexed", "fusion_indexed_documents", "Documents Elasticsearch confirmed"),
        ("acks", "fusion_acks", "Acks published for confirmed documents"),
    ):
        family = CounterMetricFamily(name, help, labels=["source"])
        for source in config.source_names:
            family.add_metric([source], getattr(figures.source(source), what))
        yield family
    lost = CounterMetricFamily(
        "fusion_source_records_lost",
        "Source records deleted from their topic before the indexer read them",
        labels=["source", "partition"],
    )
    for source in config.source_names:
        for partition, count in sorted(figures.source(source).lost_by_partition.items()):
            lost.add_metric([source, str(partition)], count)
    yield lost


def _counter(figures: Figures) -> Iterator[Metric]:
    # fusion_keys_*, not fusion_counter_*: Prometheus reads "counter" in a name as a type.
    for event, value, help in (
        ("fired", figures.fired, "Keys whose every required source became searchable (once each)"),
        ("incomplete", figures.incomplete, "Keys whose deadline passed, a source missing"),
        ("updated", figures.updated, "Source changes to keys that had already fired"),
    ):
        yield CounterMetricFamily(f"fusion_keys_{event}", help, value=value)
    yield GaugeMetricFamily(
        "fusion_keys_pending",
        "Keys seen in this run that neither fired nor expired yet",
        value=figures.pending_keys,
    )
    yield GaugeMetricFamily(
        "fusion_fanout_pending_records",
        "Dimension rows' fan-outs asked or continued and not worked yet",
        value=figures.fanouts_pending,
    )
    yield CounterMetricFamily(
        "fusion_fanout_keys",
        "Keys a dimension row's fan-out told of the row's change (slot acks)",
        value=figures.fanout_keys,
    )
    yield GaugeMetricFamily(
        "fusion_state_keys",
        "Keys in the counter's state after its last batch",
        value=figures.state_keys,
    )


def _enricher(figures: Figures) -> Iterator[Metric]:
    yield CounterMetricFamily(
        "fusion_ready_events",
        "Ready, update and incomplete events the enricher read",
        value=figures.ready,
    )
    enriched = CounterMetricFamily(
        "fusion_enriched_documents",
        "Enriched documents Elasticsearch confirmed, by why they were written",
        labels=["kind"],
    )
    updated, partial = figures.enriched_updates, figures.enriched_partial
    first = figures.enriched - updated - partial
    for kind, value in (("complete", first), ("update", updated), ("partial", partial)):
        enriched.add_metric([kind], value)
    yield enriched
    yield CounterMetricFamily(
        "fusion_children_rows",
        "Children rows the enrichment's searches put in arrays (docs/children.md)",
        value=figures.children_fetched,
    )
    yield CounterMetricFamily(
        "fusion_children_arrays_truncated",
        "Children arrays cut at max_children or max_children_bytes",
        value=figures.arrays_truncated,
    )
