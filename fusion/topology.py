"""The topology: which queries a pipeline runs, what each reads, and which components it holds.

Built once from the pipeline file (:func:`topology_of`), and the only code that
reads ``layout`` and ``enrich_in`` besides the file's validation. Everything
that asks which queries exist (``fusion run`` and its ``--only``, the leases,
lag and ``fusion status``, the counter's checkpoint, the benchmarks) asks it.

- ``layout = "single"``: one query, ``single``, indexes every source, hands on
  the acks, counts and enriches what it fires, in the same micro-batch.
- ``layout = "stages"``: an indexer query over every source topic
  (``indexers``), or one per source (``indexer-<source>``) for a deployment that
  runs them apart; the counter over the acks topic (``counter``); and with
  ``enrich_in = "enricher"`` an enricher over the ready events (``enricher``),
  else the counter's task enriches what it fires.

A query's name is its checkpoint directory and its consumer group
(``fusion-<pipeline>-<name>``, where its batch markers go); a component is what
one process runs at a time (its lease, :mod:`fusion.elastic.lease`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from fusion.core import ConfigError, PipelineConfig

SINGLE = "single"  # the whole pipeline as one query
ALL_SOURCES = "indexers"  # the indexer query over every source topic
COUNTER = "counter"
ENRICHER = "enricher"

# What a query does, which says how it starts (fusion.pipeline.STARTERS; the benchmark
# brings its naive baseline's kind and starter).
Kind = Literal["single", "indexer", "counter", "enricher"]
# What an indexing query's task does with its partition (a task reads one topic's): index
# a source's records, fan a dimension's change out a page at a time, hand slot acks on.
Task = Literal["index", "fan_out", "forward_slot_acks"]


@dataclass(frozen=True)
class Query:
    """One streaming query: its name, the topics it reads, the components it holds."""

    kind: Kind | str
    name: str
    reads: tuple[str, ...]
    components: tuple[str, ...]
    sources: tuple[str, ...] = ()  # the sources it indexes
    enriches: bool = False  # it counts, and its task enriches the keys it fires


@dataclass(frozen=True)
class Topology:
    """Every query a pipeline's layout has, and the ones `fusion run` runs by default."""

    layout: str
    queries: tuple[Query, ...]
    default: tuple[str, ...]
    source_names: tuple[str, ...]

    def query(self, name: str) -> Query:
        for query in self.queries:
            if query.name == name:
                return query
        raise KeyError(name)

    @property
    def counter_query(self) -> str:
        """The query that keeps the counter's keyed state (``single``, or ``counter``)."""
        return next(q.name for q in self.queries if q.kind in ("single", "counter"))

    @property
    def enricher_apart(self) -> bool:
        """Whether an enricher query of its own enriches (``enrich_in = "enricher"``)."""
        return any(q.kind == "enricher" for q in self.queries)

    def inputs(self) -> dict[str, tuple[str, ...]]:
        """Each query's name and the topics it reads."""
        return reads(self.queries)

    def select(self, only: str | None = None) -> tuple[Query, ...]:
        """The queries `fusion run` runs: all of the default, or the component ``only``."""
        choices = [ALL_SOURCES, COUNTER, ENRICHER, *(f"indexer:{s}" for s in self.source_names)]
        if only is not None and only not in choices:
            names = ", ".join(choices)
            raise ConfigError("--only", "", f"unknown component {only!r}; choose one of {names}")
        if only is None:
            return tuple(self.query(name) for name in self.default)
        if self.layout == "single":
            raise ConfigError(
                "--only",
                only,
                'this pipeline runs as one query (layout = "single"); set layout = "stages" '
                "in [pipeline] to run its components apart",
            )
        if only == ENRICHER and not self.enricher_apart:
            raise ConfigError(
                "--only",
                ENRICHER,
                'this pipeline enriches in the counter\'s task (enrich_in = "counter"); set '
                'enrich_in = "enricher" in [pipeline] to run the enricher as a query of its own',
            )
        if only in (COUNTER, ENRICHER):
            return (self.query(only),)
        return (self.query(indexer_name(only.removeprefix("indexer:"))),)


@dataclass(frozen=True)
class Route:
    """The task that takes a partition of one topic, and the source it indexes."""

    task: Task
    source: str | None = None


def routes(config: PipelineConfig, query: Query) -> dict[str, Route]:
    """Which task takes each topic an indexing ``query`` reads: its sources' topics are
    indexed, the fan-out topic's pages fanned out, the slot acks handed on to the counter."""
    by_topic = {
        config.fanout_topic: Route("fan_out"),
        config.slots_topic: Route("forward_slot_acks"),
    }
    by_topic |= {config.topic_of(config.source(s)): Route("index", s) for s in query.sources}
    return {topic: by_topic[topic] for topic in query.reads}


def sources_read(by_topic: Mapping[str, Route]) -> dict[str, str]:
    """The source topics among a query's :func:`routes`, each with its source's name."""
    return {t: r.source for t, r in by_topic.items() if r.source is not None}


def indexer_name(source: str | None) -> str:
    """The indexer query of one source (``indexer-<source>``), or of every source."""
    return ALL_SOURCES if source is None or source == ALL_SOURCES else f"indexer-{source}"


def source_readers(source_names: Sequence[str]) -> list[str]:
    """Every query, in any layout, that may have read the source topics.

    A pipeline whose layout changed, or whose indexers ran apart and now run
    together, starts a new indexer query where the others left off.
    """
    return [SINGLE, ALL_SOURCES, *(indexer_name(s) for s in source_names)]


def reads(queries: Iterable[Query]) -> dict[str, tuple[str, ...]]:
    """Each query's name and the topics it reads (what lag and status take)."""
    return {q.name: q.reads for q in queries}


def components(queries: Sequence[Query]) -> list[str]:
    """What ``queries`` hold, in order, each once: one process runs each."""
    held: list[str] = []
    for query in queries:
        held += [c for c in query.components if c not in held]
    return held


def topology_of(config: PipelineConfig) -> Topology:
    """The queries of ``config``'s layout."""
    names = tuple(config.source_names)
    indexers = tuple(f"indexer:{s}" for s in names)
    if config.pipeline.layout == "single":
        single = Query(
            "single",
            SINGLE,
            _input_topics(config, names, counts=True),
            (*indexers, COUNTER, ENRICHER),
            sources=names,
            enriches=True,
        )
        return Topology("single", (single,), (SINGLE,), names)
    apart = config.pipeline.enrich_in == "enricher"
    queries = [
        Query("indexer", ALL_SOURCES, _input_topics(config, names), indexers, names),
        *(
            Query("indexer", indexer_name(s), _input_topics(config, [s]), (f"indexer:{s}",), (s,))
            for s in names
        ),
        Query(
            "counter",
            COUNTER,
            (config.acks_topic, *[config.slots_topic] * bool(config.dimensions)),
            (COUNTER,) if apart else (COUNTER, ENRICHER),
            enriches=not apart,
        ),
    ]
    if apart:
        queries.append(Query("enricher", ENRICHER, _enricher_topics(config), (ENRICHER,)))
    default = (ALL_SOURCES, COUNTER, *(ENRICHER,) * apart)
    return Topology("stages", tuple(queries), default, names)


def _input_topics(
    config: PipelineConfig, sources: Sequence[str], counts: bool = False
) -> tuple[str, ...]:
    """What an indexer query of ``sources`` reads: their topics, the fan-out topic if it
    works the fan-outs, and (``counts``: the single query) the slot acks."""
    topics = [config.topic_of(config.source(s)) for s in sources]
    topics += [config.fanout_topic] * (config.fanout_source in sources)
    return (*topics, *[config.slots_topic] * (counts and bool(config.dimensions)))


def _enricher_topics(config: PipelineConfig) -> tuple[str, ...]:
    """Ready events; updates unless ignored; incomplete keys if they get partial documents."""
    topics = [config.ready_topic]
    if config.pipeline.on_update == "reenrich":
        topics.append(config.updates_topic)
    if config.pipeline.on_timeout == "partial":
        topics.append(config.incomplete_topic)
    return tuple(topics)
