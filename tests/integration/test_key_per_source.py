"""Each source names where its key is, and a source may publish Debezium's change events.

Three sources of one order, as three systems publish them: ``orders`` as JSON
with the key nested (``order.id``), ``payments`` as JSON keyed by the Kafka
record key, ``shipments`` as a database table's change events (Debezium's
envelope in its JSON converter's wrapper, the key in the record key's JSON):
a snapshot read, then an update; a tombstone, which is counted and dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from tests.integration.pipelines import drop, enriched_docs, make_config, read_topic, run_pipeline


def _event(op: str, row: dict[str, Any] | None, before: dict[str, Any] | None = None) -> bytes:
    payload = {"before": before, "after": row, "op": op, "source": {"table": "shipments"}}
    return json.dumps({"schema": {"type": "struct"}, "payload": payload}).encode()


def test_sources_keyed_by_a_path_the_record_key_and_a_change_events_key(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["orders", "payments", "shipments"])
    sources = config.model_dump(mode="python")["sources"]
    sources[0]["key"] = "order.id"
    sources[1]["key"] = "record_key"
    sources[2] |= {"key": "record_key.order_id", "format": "debezium"}
    config = config.model_validate(config.model_dump(mode="python") | {"sources": sources})
    topic = {s.name: config.topic_of(s) for s in config.sources}
    kafka_topics.ensure_topics(config)
    try:
        produce(
            config,
            [
                (topic["orders"], "o-1", b'{"order": {"id": 7}, "total": 12.5}'),
                (topic["orders"], "o-2", b'{"order": {"id": "8"}, "total": 3}'),
                (topic["payments"], "7", b'{"paid": true}'),
                (topic["payments"], "8", b'{"paid": false}'),
                (topic["shipments"], '{"order_id": 7}', _event("r", {"order_id": 7, "to": "Oslo"})),
                (topic["shipments"], '{"order_id": 8}', _event("c", {"order_id": 8, "to": "Rome"})),
                (topic["shipments"], '{"order_id": 8}', _event("u", {"order_id": 8, "to": "Pisa"})),
                (topic["shipments"], '{"order_id": 9}', None),  # a tombstone
            ],
        )
        metrics = run_pipeline(
            spark,
            config,
            done=lambda m: (
                m.get("enricher.enriched") >= 2
                and m.get(names.source_count("shipments", names.SOURCE_TOMBSTONES)) == 1
            ),
        )
        docs = enriched_docs(settings, config)
        assert set(docs) == {"7", "8"}
        assert docs["7"]["orders"] == {"order": {"id": 7}, "total": 12.5}
        assert docs["7"]["payments"] == {"paid": True}
        assert docs["7"]["shipments"] == {"order_id": 7, "to": "Oslo"}  # the row, not the event
        assert docs["8"]["shipments"]["to"] in (
            "Rome",
            "Pisa",
        )  # fired on one, updated to the other
        assert read_topic(settings, config.dlq_topic) == [], "the tombstone is no dead letter"
        assert metrics.get(names.source_count("shipments", names.DLQ)) == 0
    finally:
        drop(config)
