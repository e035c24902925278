"""Declared types checked per record (``strict = true``), against real Kafka, Spark and ES.

Elasticsearch would coerce ``"12"`` into a ``long`` field and index it: with
``strict`` the record is a dead letter naming the field, the declared type and
what was found, and its key never fires on it; a record of the declared types
goes through. A source with ``strict = false`` in a strict pipeline is not checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    make_config,
    reached,
    read_topic,
    run_pipeline,
)


def test_a_record_of_another_type_than_declared_is_a_dead_letter_not_a_part(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    base = make_config(settings, tmp_path, ["orders", "notes"], strict=True)
    data = base.model_dump(mode="python")
    data["sources"][0]["fields"] = {"quantity": "long", "shipped": "boolean"}
    data["sources"][1] |= {"fields": {"quantity": "long"}, "strict": False}
    config = PipelineConfig.model_validate(data)
    orders, notes = (config.topic_of(s) for s in config.sources)
    kafka_topics.ensure_topics(config)
    try:
        produce(
            config,
            [
                (orders, "a", b'{"entity_id": "a", "quantity": 12, "shipped": true}'),
                (orders, "b", b'{"entity_id": "b", "quantity": "12", "shipped": true}'),
                (orders, "c", b'{"entity_id": "c", "quantity": 3}'),
                (notes, "a", b'{"entity_id": "a", "quantity": "7"}'),
                (notes, "b", b'{"entity_id": "b", "quantity": "7"}'),
                (notes, "c", b'{"entity_id": "c", "quantity": "7"}'),
            ],
        )
        metrics = run_pipeline(
            spark,
            config,
            done=reached(
                {
                    "enricher.enriched": 1,
                    names.source_count("orders", names.DLQ): 2,
                    names.source_count("notes", names.SOURCE_INDEXED): 3,
                }
            ),
        )
        assert set(enriched_docs(settings, config)) == {"a"}
        letters = {key: letter for key, letter in read_topic(settings, config.dlq_topic)}
        assert letters["b"]["reason"] == (
            "field 'quantity' declared long, found string \"12\" (strict)"
        )
        assert letters["c"]["reason"] == "field 'shipped' declared boolean is missing (strict)"
        assert letters["b"]["source"] == "orders" and letters["b"]["original"].startswith("{")
        # strict = false: the source is not checked, and Elasticsearch coerces "7" into the long.
        assert metrics.get(names.source_count("notes", names.DLQ)) == 0
    finally:
        drop(config)
