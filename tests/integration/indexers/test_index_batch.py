"""One indexer task against real Elasticsearch and Kafka, called as an executor calls it.

The task returns its records; the executor's JVM writer publishes them in one
transaction with the batch marker. Here the test hands the task's output to
that writer itself, through the session's Spark.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.elastic import indexes as es_indexes
from fusion.kafka import topics as kafka_topics
from fusion.spark.jvm_writer import task_counts, writer_spec
from fusion.spark.tasks import OUTPUT_SCHEMA, Job, output_columns
from indexers.records import RawRecord
from indexers.spec import index_spec
from indexers.task import index_records
from tests.integration.pipelines import drop, make_config, read_topic


def _config(settings: Settings, tmp_path: Path, **options: Any) -> PipelineConfig:
    base = make_config(settings, tmp_path, ["billing", "insurance"], **options)
    data = base.model_dump(mode="python")
    data["sources"][0]["fields"] = {"amount": "double"}
    config = PipelineConfig.model_validate(data)
    kafka_topics.ensure_topics(config)
    es_indexes.ensure_indexes(es_client.connect(config.elasticsearch), config)
    return config


@pytest.fixture
def config(settings: Settings, tmp_path: Path) -> Iterator[PipelineConfig]:
    config = _config(settings, tmp_path)
    yield config
    drop(config)


def _job(config: PipelineConfig, query: str, batch_id: int) -> Job:
    """What the driver ships with batch ``batch_id`` of query ``query`` (a checkpoint's id)."""
    return Job("indexer-billing", "indexer", query, batch_id, config.pipeline.task_chunk_bytes)


def _raw(value: bytes, offset: int) -> RawRecord:
    return RawRecord(value, "billing-topic", 0, offset)


def _index(spark: Any, config: PipelineConfig, job: Job, raws: list[RawRecord]) -> dict[str, int]:
    """Index ``raws`` as one task of ``job``, publish its output as the executor does; counts."""
    columns = output_columns(index_records(index_spec(config, ["billing"]), "billing", raws))
    rows = list(zip(*columns.values(), strict=True))
    # One Spark partition, as the task's rows are: the writer publishes per partition.
    output = spark.createDataFrame(rows, OUTPUT_SCHEMA).coalesce(1)
    writer = spark._jvm.fusion.output.TransactionalWriter
    counts: dict[str, int] = {}
    for row in task_counts(writer.publish(output._jdf, writer_spec(config, job, {}))):
        counts[row.name] = counts.get(row.name, 0) + row.value
    return counts


def test_only_confirmed_documents_are_acked_and_mapping_conflicts_go_to_the_dlq(
    spark: Any, settings: Settings, config: PipelineConfig
) -> None:
    _index(
        spark,
        config,
        _job(config, str(uuid.uuid4()), 0),
        [
            _raw(b'{"entity_id": "A", "amount": 1.5}', 1),
            _raw(b'{"entity_id": "B", "amount": "not a number"}', 2),
            _raw(b'{"entity_id": "A", "amount": 2.5}', 3),
            _raw(b"not json", 4),
        ],
    )

    es = es_client.connect(config.elasticsearch)
    # refresh=wait_for returned before the acks went out: A is searchable now.
    hits = es.search(index=config.index_of(config.source("billing")), query={"match_all": {}})
    assert [(h["_id"], h["_source"]["amount"]) for h in hits["hits"]["hits"]] == [("A", 2.5)]
    acks = read_topic(settings, config.acks_topic)
    assert [(key, ack["source"], ack["offset"]) for key, ack in acks] == [("A", "billing", 3)]
    assert acks[0][1]["index"] == config.index_of(config.source("billing"))
    # The version is the Kafka offset + 1, so a later record of a key is always newer.
    assert acks[0][1]["version"] == 4
    letters = [letter for _, letter in read_topic(settings, config.dlq_topic)]
    assert sorted(letter["offset"] for letter in letters) == [2, 4]  # each once
    dead = {letter["offset"]: letter for letter in letters}
    assert "rejected by Elasticsearch" in dead[2]["reason"]
    assert "amount" in dead[2]["reason"]
    assert dead[2]["original"] == '{"entity_id": "B", "amount": "not a number"}'
    assert dead[4]["reason"].startswith("invalid JSON")


def test_an_acked_document_is_searchable_when_its_ack_is_read_whatever_the_refresh_interval(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    # A source index that refreshes every 30 s on its own: only the bulk request's
    # refresh=wait_for can make a document searchable before its ack goes out.
    config = _config(settings, tmp_path, refresh_interval="30s")
    try:
        es = es_client.connect(config.elasticsearch)
        index = config.index_of(config.source("billing"))
        assert (
            es.indices.get_settings(index=index)[index]["settings"]["index"]["refresh_interval"]
            == "30s"
        )
        records = [_raw(b'{"entity_id": "S%d", "amount": %d}' % (n, n), n) for n in range(5)]
        _index(spark, config, _job(config, str(uuid.uuid4()), 0), records)

        acks = read_topic(settings, config.acks_topic)
        assert sorted(key for key, _ in acks) == [f"S{n}" for n in range(5)]
        # A search, not a get (a get is real-time and would find an unrefreshed document).
        ids = [ack["doc_id"] for _, ack in acks]
        found = es.search(index=index, query={"ids": {"values": ids}}, size=10)
        assert sorted(hit["_id"] for hit in found["hits"]["hits"]) == sorted(ids)
    finally:
        drop(config)


def test_replays_are_idempotent_and_older_data_never_overwrites_newer(
    spark: Any, settings: Settings, config: PipelineConfig
) -> None:
    query = str(uuid.uuid4())
    newer: list[Any] = [_raw(b'{"entity_id": "R", "amount": 9.0}', 7)]
    older: list[Any] = [_raw(b'{"entity_id": "R", "amount": 1.0}', 5)]

    first = _index(spark, config, _job(config, query, 0), newer)
    # Spark replaying batch 0 in a new executor: its writer reads the marker from Kafka
    # (not from the writer cached here), finds the batch committed, writes nothing.
    spark._jvm.fusion.output.TransactionalWriter.closeAll()
    replay = _index(spark, config, _job(config, query, 0), newer)
    later = _index(spark, config, _job(config, query, 1), newer)  # same version, rewritten
    stale = _index(spark, config, _job(config, query, 2), older)  # older, after the newer

    es = es_client.connect(config.elasticsearch)
    doc = es.get(index=config.index_of(config.source("billing")), id="R")
    assert (doc["_version"], doc["_source"]["amount"]) == (8, 9.0)
    acks = read_topic(settings, config.acks_topic)
    assert [(ack["version"], ack["offset"]) for _, ack in acks] == [(8, 7), (8, 7)]
    assert first["tasks.replayed"] == 0 and replay["tasks.replayed"] == 1
    # The replay reports what batch 0 committed, so the driver counts it once.
    assert replay["indexer.billing.indexed"] == first["indexer.billing.indexed"] == 1
    assert later["indexer.billing.indexed"] == 1
    assert stale["indexer.billing.stale"] == 1 and stale.get("indexer.billing.acks", 0) == 0
    assert read_topic(settings, config.dlq_topic) == []
