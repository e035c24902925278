"""Refusals that are the deployment's, not a record's: one line, the class's exit code, no DLQ.

Against the real Elasticsearch: an index that is gone is fatal at once, for the
bulk writes of every stage and for both lookup modes (not retried for the
budget, not read as "document missing").
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.errors import ExitCode
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.elastic.bulk import Target, write_documents
from fusion.elastic.errors import IndexBlockedError, IndexGoneError
from fusion.elastic.retry import RetryPolicy
from fusion.enricher import lookups
from fusion.enricher.spec import enrich_spec
from fusion.observe.metrics import Metrics
from fusion.observe.names import ES_RETRIES
from tests.integration.pipelines import make_config

GONE_PREFIX = "fusion-gone-"


@dataclass(frozen=True)
class Doc:
    key: str
    source: dict[str, Any]
    where: tuple[str, int, int] = ("t", 0, 0)
    original: bytes = b"{}"
    version: int | None = None


@pytest.fixture
def no_auto_create(settings: Settings, cluster_settings: None) -> Iterator[str]:
    """Indexes named ``fusion-gone-*`` are not created by a write (as with
    ``action.auto_create_index: false``): a write to one meets a 404."""
    es = es_client.connect(settings.elasticsearch)
    es.cluster.put_settings(persistent={"action.auto_create_index": f"-{GONE_PREFIX}*,+*"})
    try:
        yield f"{GONE_PREFIX}{time.monotonic_ns()}"
    finally:
        es.cluster.put_settings(persistent={"action.auto_create_index": None})


def test_a_bulk_write_to_an_index_that_is_gone_stops_at_once_and_dead_letters_nothing(
    settings: Settings, no_auto_create: str
) -> None:
    es = es_client.connect(settings.elasticsearch)
    target = Target(no_auto_create, "indexer", "a", 100)
    metrics = Metrics()

    with pytest.raises(IndexGoneError) as raised:
        write_documents(es, target, [Doc("K1", {"x": 1})], RetryPolicy(budget_seconds=60), metrics)

    assert f"index {no_auto_create} does not exist" in str(raised.value)
    assert metrics.get(ES_RETRIES) == 0, "not retried as if it were transient"


def test_a_write_blocked_index_stops_with_the_block_and_its_fix(
    settings: Settings, make_index: Any
) -> None:
    """A real block (index.blocks.write) answers 403 too: named as the block, not a privilege."""
    es = es_client.connect(settings.elasticsearch)
    index = make_index("blocked")
    es.indices.create(index=index)
    es.indices.put_settings(index=index, settings={"index.blocks.write": True})
    metrics = Metrics()
    try:
        with pytest.raises(IndexBlockedError) as raised:
            write_documents(
                es,
                Target(index, "indexer", "a", 100),
                [Doc("K1", {"x": 1})],
                RetryPolicy(budget_seconds=60),
                metrics,
            )
    finally:
        es.indices.put_settings(index=index, settings={"index.blocks.write": None})

    message = str(raised.value)
    assert f"refuses writes to index {index}: it is blocked" in message
    assert "index write" in message and '"index.blocks.write": null' in message
    assert "privilege" not in message and "\n" not in message
    assert raised.value.exit_code == ExitCode.DEPLOYMENT
    assert metrics.get(ES_RETRIES) == 0


@pytest.mark.parametrize("mode", ["batched", "per-source"])
def test_a_lookup_in_an_index_that_is_gone_stops_in_both_modes(
    settings: Settings, tmp_path: Path, mode: str
) -> None:
    config: PipelineConfig = make_config(settings, tmp_path, ["a", "b"], lookup=mode)
    es = es_client.connect(settings.elasticsearch)
    metrics = Metrics()

    with pytest.raises(IndexGoneError) as raised:
        lookups.fetch(es, enrich_spec(config), ["K1"], metrics, RetryPolicy(budget_seconds=60))

    assert f"index {config.index_of(config.source('a'))} does not exist" in str(raised.value)
    assert metrics.get(ES_RETRIES) == 0, "not retried as if it were transient"
