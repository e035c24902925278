"""One indexer micro-batch against real Elasticsearch and Kafka, without Spark."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion import clients, topology
from fusion.config import PipelineConfig
from fusion.metrics import Metrics
from fusion.settings import Settings
from indexers.query import IndexBatch
from indexers.records import RawRecord
from tests.integration.pipelines import drop, make_config, read_topic


@pytest.fixture
def config(settings: Settings, tmp_path: Path) -> Iterator[PipelineConfig]:
    base = make_config(settings, tmp_path, ["billing", "insurance"])
    data = base.model_dump(mode="python")
    data["sources"][0]["fields"] = {"amount": "double"}
    config = PipelineConfig.model_validate(data)
    topology.ensure_topics(config)
    topology.ensure_indexes(clients.elasticsearch(config.elasticsearch), config)
    # The batch's Kafka transaction is named after the query id Spark keeps in the
    # checkpoint; without Spark, the test writes that file as Spark would.
    checkpoint = config.checkpoint_dir / "indexer-billing"
    checkpoint.mkdir(parents=True)
    (checkpoint / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    yield config
    drop(config)


def _raw(value: bytes, offset: int) -> RawRecord:
    return RawRecord(value, "billing-topic", 0, offset)


def test_only_confirmed_documents_are_acked_and_mapping_conflicts_go_to_the_dlq(
    settings: Settings, config: PipelineConfig
) -> None:
    batch = IndexBatch(config, config.source("billing"), Metrics())

    batch.handle(
        0,
        [
            _raw(b'{"entity_id": "A", "amount": 1.5}', 1),
            _raw(b'{"entity_id": "B", "amount": "not a number"}', 2),
            _raw(b'{"entity_id": "A", "amount": 2.5}', 3),
            _raw(b"not json", 4),
        ],
    )

    es = clients.elasticsearch(config.elasticsearch)
    # refresh=wait_for returned before the acks went out: A is searchable now.
    hits = es.search(index=config.index_of(config.source("billing")), query={"match_all": {}})
    assert [(h["_id"], h["_source"]["amount"]) for h in hits["hits"]["hits"]] == [("A", 2.5)]
    acks = read_topic(settings, config.acks_topic)
    assert [(key, ack["source"], ack["offset"]) for key, ack in acks] == [("A", "billing", 3)]
    assert acks[0][1]["index"] == config.index_of(config.source("billing"))
    # The version is the Kafka offset + 1, so a later record of a key is always newer.
    assert acks[0][1]["version"] == 4
    dead = {letter["offset"]: letter for _, letter in read_topic(settings, config.dlq_topic)}
    assert set(dead) == {2, 4}
    assert "rejected by Elasticsearch" in dead[2]["reason"]
    assert "amount" in dead[2]["reason"]
    assert dead[2]["original"] == '{"entity_id": "B", "amount": "not a number"}'
    assert dead[4]["reason"].startswith("invalid JSON")


def test_replays_are_idempotent_and_older_data_never_overwrites_newer(
    settings: Settings, config: PipelineConfig
) -> None:
    metrics = Metrics()
    batch = IndexBatch(config, config.source("billing"), metrics)
    newer: list[Any] = [_raw(b'{"entity_id": "R", "amount": 9.0}', 7)]
    older: list[Any] = [_raw(b'{"entity_id": "R", "amount": 1.0}', 5)]

    batch.handle(0, newer)
    batch.handle(0, newer)  # Spark replaying batch 0: its transaction committed already
    batch.handle(1, newer)  # the same record in a later batch: same version, rewritten
    batch.handle(2, older)  # an older record replayed after the newer one

    es = clients.elasticsearch(config.elasticsearch)
    doc = es.get(index=config.index_of(config.source("billing")), id="R")
    assert (doc["_version"], doc["_source"]["amount"]) == (8, 9.0)
    acks = read_topic(settings, config.acks_topic)
    assert [(ack["version"], ack["offset"]) for _, ack in acks] == [(8, 7), (8, 7)]
    assert metrics.get("output.replays_skipped") == 1
    assert metrics.get("indexer.billing.stale") == 1
    assert read_topic(settings, config.dlq_topic) == []
