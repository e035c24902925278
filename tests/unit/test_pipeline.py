"""What a run selects: its queries, and the components whose leases it takes."""

from __future__ import annotations

from typing import Any

from fusion.core.config import PipelineConfig
from fusion.pipeline import select


def _config(**pipeline: Any) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id"} | pipeline,
            "sources": [{"name": "a"}, {"name": "b"}],
        }
    )


def test_each_selection_leases_the_components_it_runs() -> None:
    single = _config()
    assert select(single, None).components(single) == [
        "indexer:a",
        "indexer:b",
        "counter",
        "enricher",
    ]
    stages = _config(layout="stages")
    assert select(stages, "indexer:b").components(stages) == ["indexer:b"]
    assert select(stages, "indexers").components(stages) == ["indexer:a", "indexer:b"]
    # The counter's task enriches what it fires (enrich_in = "counter"): it is the enricher too.
    assert select(stages, "counter").components(stages) == ["counter", "enricher"]
    apart = _config(layout="stages", enrich_in="enricher")
    assert select(apart, "counter").components(apart) == ["counter"]
    assert select(apart, "enricher").components(apart) == ["enricher"]
    assert select(apart, None).components(apart) == [
        "indexer:a",
        "indexer:b",
        "counter",
        "enricher",
    ]
