"""What the enricher asks Elasticsearch for: each key's parts, each named row once, and of
the key's enriched document its version only (pure; a recording client, no server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.enricher import lookups
from fusion.enricher.spec import enrich_spec
from fusion.observe.metrics import Metrics

CATALOG = """
[pipeline]
name = "catalog"
key_field = "item_id"
lookup = "{lookup}"

[[sources]]
name = "item"
references = {{ brand = "brand_id" }}

[[sources]]
name = "brand"
dimension = true
"""


class Recording:
    """Answers every lookup with a found document at version 7; keeps what was asked."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def mget(self, docs: list[dict[str, Any]]) -> dict[str, Any]:
        self.asked.extend(docs)
        return {"docs": [self._hit(doc) for doc in docs]}

    def get(self, index: str, id: str, source: bool = True) -> dict[str, Any]:
        doc = {"_index": index, "_id": id} | ({} if source else {"_source": False})
        self.asked.append(doc)
        return self._hit(doc)

    def _hit(self, doc: dict[str, Any]) -> dict[str, Any]:
        hit = {"_index": doc["_index"], "_id": doc["_id"], "found": True, "_version": 7}
        return hit if doc.get("_source") is False else hit | {"_source": {"brand_id": "A"}}


def _config(tmp_path: Path, lookup: str) -> PipelineConfig:
    path = tmp_path / "pipeline.toml"
    path.write_text(CATALOG.format(lookup=lookup))
    return PipelineConfig.load(path, env={})


@pytest.mark.parametrize("lookup", ["batched", "per-source"])
def test_the_enriched_document_is_read_for_its_version_only(tmp_path: Path, lookup: str) -> None:
    config = _config(tmp_path, lookup)
    es = Recording()
    rows = {"K1": {"brand": "A"}, "K2": {"brand": "A"}}

    found = lookups.fetch(es, enrich_spec(config), ["K1", "K2"], Metrics(), rows=rows, written=True)  # type: ignore[arg-type]

    enriched = [doc for doc in es.asked if doc["_index"] == config.enriched_index]
    assert sorted(doc["_id"] for doc in enriched) == ["K1", "K2"]
    assert all(doc.get("_source") is False for doc in enriched)
    parts = [doc for doc in es.asked if doc["_index"] != config.enriched_index]
    assert sorted(doc["_id"] for doc in parts) == ["A", "K1", "K2"]  # brand A once
    assert not any("_source" in doc for doc in parts)
    assert found["K1"][lookups.WRITTEN].version == 7
    assert found["K1"]["brand"].source == {"brand_id": "A"}
