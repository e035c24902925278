"""The topology: the queries of each layout, what they read, the components they hold."""

from __future__ import annotations

from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError
from fusion.topology import (
    Route,
    components,
    routes,
    source_readers,
    sources_read,
    topology_of,
)


def _config(**pipeline: Any) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id"} | pipeline,
            "sources": [{"name": "a"}, {"name": "b"}],
        }
    )


def _dimensions() -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id", "layout": "stages"},
            "sources": [
                {"name": "item", "references": {"brand": "brand_id"}},
                {"name": "brand", "dimension": True},
            ],
        }
    )


def test_the_single_layout_is_one_query_that_holds_every_component() -> None:
    topology = topology_of(_config())

    (query,) = topology.select()
    assert (query.name, query.kind, query.enriches) == ("single", "single", True)
    assert query.reads == ("a", "b")  # each source reads the topic of its name
    assert components(topology.select()) == ["indexer:a", "indexer:b", "counter", "enricher"]
    assert topology.counter_query == "single"
    assert topology.inputs() == {"single": ("a", "b")}


def test_the_stages_layout_runs_the_indexers_and_the_counter_which_enriches() -> None:
    topology = topology_of(_config(layout="stages"))

    assert [q.name for q in topology.select()] == ["indexers", "counter"]
    assert topology.counter_query == "counter" and not topology.enricher_apart
    assert topology.query("counter").enriches
    assert topology.inputs() == {
        "indexers": ("a", "b"),
        "indexer-a": ("a",),
        "indexer-b": ("b",),
        "counter": ("p.acks",),
    }
    # The counter's task enriches what it fires (enrich_in = "counter"): it is the enricher too.
    assert components(topology.select("counter")) == ["counter", "enricher"]
    assert components(topology.select("indexer:b")) == ["indexer:b"]
    assert components(topology.select("indexers")) == ["indexer:a", "indexer:b"]


def test_an_enricher_apart_is_a_query_of_its_own() -> None:
    topology = topology_of(_config(layout="stages", enrich_in="enricher"))

    assert [q.name for q in topology.select()] == ["indexers", "counter", "enricher"]
    assert components(topology.select("counter")) == ["counter"]
    assert components(topology.select("enricher")) == ["enricher"]
    assert components(topology.select()) == ["indexer:a", "indexer:b", "counter", "enricher"]
    assert topology.query("enricher").reads == ("p.ready", "p.updated")
    assert not topology.query("counter").enriches


def test_dimensions_add_the_fan_out_and_the_slot_acks_to_what_is_read() -> None:
    stages = topology_of(_dimensions())
    single = topology_of(_dimensions().model_copy(update={"pipeline": _config().pipeline}))

    # The referencing source's indexer works the fan-outs of the rows it names.
    assert stages.query("indexer-item").reads == ("item", "p.fanout")
    assert stages.query("indexer-brand").reads == ("brand",)
    assert stages.query("counter").reads == ("p.acks", "p.slots")
    assert single.query("single").reads == ("item", "brand", "p.fanout", "p.slots")


def test_each_topic_an_indexing_query_reads_goes_to_the_task_for_it() -> None:
    stages = topology_of(_dimensions())
    single = _dimensions().model_copy(update={"pipeline": _config().pipeline})

    assert routes(single, topology_of(single).query("single")) == {
        "item": Route("index", "item"),
        "brand": Route("index", "brand"),
        "p.fanout": Route("fan_out"),
        "p.slots": Route("forward_slot_acks"),  # the single query counts: it hands the slot acks on
    }
    # The stages' indexers index and fan out; the counter query reads the slot acks itself.
    assert routes(_dimensions(), stages.query("indexers")) == {
        "item": Route("index", "item"),
        "brand": Route("index", "brand"),
        "p.fanout": Route("fan_out"),
    }
    assert routes(_dimensions(), stages.query("indexer-brand")) == {
        "brand": Route("index", "brand")
    }
    # The source topics alone, with their sources (what a query's data-loss check watches).
    assert sources_read(routes(single, topology_of(single).query("single"))) == {
        "item": "item",
        "brand": "brand",
    }
    assert sources_read(routes(_dimensions(), stages.query("indexer-brand"))) == {"brand": "brand"}


@pytest.mark.parametrize(
    ("options", "only", "says"),
    [
        ({}, "counter", 'runs as one query (layout = "single")'),
        (
            {"layout": "stages"},
            "enricher",
            'enriches in the counter\'s task (enrich_in = "counter")',
        ),
        ({"layout": "stages"}, "indexer:c", "unknown component 'indexer:c'; choose one of"),
    ],
)
def test_a_component_the_layout_has_not_is_one_line(
    options: dict[str, str], only: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        topology_of(_config(**options)).select(only)


def test_every_query_that_may_have_read_the_source_topics() -> None:
    assert source_readers(["a", "b"]) == ["single", "indexers", "indexer-a", "indexer-b"]
