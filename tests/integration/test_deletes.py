"""A database's deletes through the whole pipeline, on real Kafka, Elasticsearch and Spark.

Three tables of one order publish Debezium's change events, each keyed by its
own column: ``orders.id``, ``payments.order_id``, ``shipments.order_id``. Four
orders fire complete; then, as a database would publish it:

- order 1 loses its shipment (a delete and its tombstone): re-enriched without
  it, ``fusion.missing`` names it, ``complete`` false;
- order 2 loses every row: its enriched document goes, and its enriched-topic
  record gets a tombstone;
- order 3 loses its payment, which is inserted again with other content: the
  document ends complete with the new row;
- order 4 changes its primary key to 40 (Debezium's delete of 4, then a create
  of 40): 4 ends without its order row, 40 waits for its payment and shipment.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from tests.integration.pipelines import (
    RunningPipeline,
    drop,
    enriched_docs,
    make_config,
    read_raw,
    read_topic,
)
from tests.integration.runs import crash

KEYS = {"orders": "id", "payments": "order_id", "shipments": "order_id"}


def _change(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> bytes:
    return json.dumps({"before": before, "after": after, "op": op, "ts_ms": 1}).encode()


def _config(settings: Settings, tmp_path: Path) -> PipelineConfig:
    config = make_config(settings, tmp_path, list(KEYS))
    data = config.model_dump(mode="python")
    for source in data["sources"]:
        source |= {"key": KEYS[source["name"]], "format": "debezium"}
    return config.model_validate(data)


def test_deletes_reach_the_enriched_index_and_topic(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = _config(settings, tmp_path)
    topic = {s.name: config.topic_of(s) for s in config.sources}
    kafka_topics.ensure_topics(config)

    def row(table: str, key: int, **fields: Any) -> dict[str, Any]:
        return {KEYS[table]: key, **fields}

    def insert(table: str, key: int, **fields: Any) -> tuple[str, str, bytes]:
        return (topic[table], str(key), _change("c", None, row(table, key, **fields)))

    def delete(table: str, key: int, **fields: Any) -> list[tuple[str, str, bytes | None]]:
        event = _change("d", row(table, key, **fields), None)
        return [(topic[table], str(key), event), (topic[table], str(key), None)]

    try:
        produce(
            config,
            [
                insert(table, key, n=key)
                for key in (1, 2, 3, 4)
                for table in ("orders", "payments", "shipments")
            ],
        )
        with RunningPipeline(spark, config) as running:
            running.wait_for(
                lambda: set(enriched_docs(settings, config)) == {"1", "2", "3", "4"},
                180,
                "four orders enriched",
            )
            changes = [
                *delete("shipments", 1),
                *delete("orders", 2),
                *delete("payments", 2),
                *delete("shipments", 2),
                *delete("payments", 3),
                *delete("orders", 4),
                insert("orders", 40, n=40),
            ]
            produce(config, changes)  # type: ignore[arg-type]
            produce(config, [insert("payments", 3, n=33, method="card")])

            def settled() -> bool:
                docs = enriched_docs(settings, config)
                paid = docs.get("3", {}).get("payments", {})
                return "2" not in docs and paid.get("n") == 33 and "orders" not in docs.get("4", {})

            running.wait_for(settled, 180, "the deletes applied")
            metrics = running.metrics

        docs = enriched_docs(settings, config)
        assert set(docs) == {"1", "3", "4"}, "order 2's rows are all gone: no document"
        one = docs["1"]
        assert "shipments" not in one and one["orders"] == {"id": 1, "n": 1}
        assert one["fusion"]["missing"] == ["shipments"] and one["fusion"]["complete"] is False
        three = docs["3"]
        assert three["payments"] == {"order_id": 3, "n": 33, "method": "card"}
        assert three["fusion"]["complete"] is True and three["fusion"]["missing"] == []
        four = docs["4"]
        assert four["fusion"]["missing"] == ["orders"] and four["payments"]["n"] == 4

        by_key: dict[str | None, list[bytes | None]] = {}
        for key, value, _ in read_raw(settings, config.enriched_topic):
            by_key.setdefault(key, []).append(value)
        assert by_key["2"][-1] is None, "order 2's last enriched record is a tombstone"
        assert all(v is not None for k, values in by_key.items() if k != "2" for v in values)
        events = [event for _, event in read_topic(settings, config.updates_topic)]
        assert sorted(e["key"] for e in events if e["kind"] == "deleted") == ["2"]

        assert metrics.get(names.COUNTER_DELETED) == 1
        assert metrics.get(names.ENRICHER_DELETED) == 1
        assert metrics.get(names.source_count("orders", names.SOURCE_DELETED)) == 2
        assert metrics.get(names.source_count("orders", names.SOURCE_TOMBSTONES)) == 2
        assert read_topic(settings, config.dlq_topic) == [], "a delete is no dead letter"
        es = es_client.connect(config.elasticsearch)
        found = es.indices.get_settings(index=config.enriched_index, name="index.gc_deletes")
        assert found[config.enriched_index]["settings"]["index"]["gc_deletes"] == "1h"
    finally:
        drop(config)


def _pipeline_file(settings: Settings, path: Path, name: str) -> Path:
    lines = ["[pipeline]", f'name = "{name}"', 'key_field = "order_id"']
    lines += [f'checkpoint_dir = "{path.parent / "checkpoints"}"', 'on_delete = "delete"']
    lines.append('trigger_interval = "200 milliseconds"')
    for table, key in KEYS.items():
        lines += ["[[sources]]", f'name = "{table}"', f'topic = "{name}.{table}"']
        lines += [f'key = "{key}"', 'format = "debezium"']
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def test_deletes_in_flight_at_every_crash_point_apply_once(
    settings: Settings, tmp_path: Path
) -> None:
    """``on_delete = "delete"``: each order loses a row while `fusion run` is killed at the
    task points (Spark retries the task) and at the driver's commit (the next run resumes);
    every order's enriched document goes once, its enriched-topic record gets one
    tombstone, and one ``deleted`` event says so; a replayed delete changes nothing."""
    name = f"del{uuid.uuid4().hex[:8]}"
    config_file = _pipeline_file(settings, tmp_path / "pipeline.toml", name)
    config = PipelineConfig.load(config_file, env={})
    kafka_topics.ensure_topics(config)
    topic = {s.name: config.topic_of(s) for s in config.sources}
    orders = range(1, 13)

    def event(op: str, table: str, key: int) -> tuple[str, str, bytes]:
        row = {KEYS[table]: key, "n": key}
        before, after = (row, None) if op == "d" else (None, row)
        return (topic[table], str(key), _change(op, before, after))

    tables = list(KEYS)
    try:
        produce(config, [event("c", table, key) for key in orders for table in tables])
        crash(config_file, settings, [], "finished", tmp_path)  # every order fired
        gone = [event("d", tables[key % 3], key) for key in orders]
        produce(config, gone[:6])
        # Every task point of the default layout, each retried within the run.
        indexer = ["indexer.before_bulk", "indexer.after_bulk", "indexer.before_commit"]
        counter = ["indexer.after_commit", "counter.before_commit", "counter.after_commit"]
        crash(
            config_file, settings, [*indexer, *counter, "enricher.after_write"], "finished",
            tmp_path,
        )  # fmt: skip
        produce(config, gone[6:] + gone[:2])  # two deletes replayed: no change
        crash(config_file, settings, ["counter.driver.before_commit"], "killed", tmp_path)
        crash(config_file, settings, [], "finished", tmp_path)

        assert enriched_docs(settings, config) == {}, "every order lost a row: no document"
        last: dict[str | None, bytes | None] = {}
        counts: dict[str | None, int] = {}
        for key, value, _ in read_raw(settings, config.enriched_topic):
            last[key] = value
            counts[key] = counts.get(key, 0) + 1
        assert set(last) == {str(k) for k in orders}
        assert all(value is None for value in last.values()), "each ends in a tombstone"
        assert set(counts.values()) == {2}, "one enriched record and one tombstone per order"
        events = [e for _, e in read_topic(settings, config.updates_topic)]
        deleted = sorted(int(e["key"]) for e in events if e["kind"] == "deleted")
        assert deleted == list(orders), "one deleted event per order"
        assert read_topic(settings, config.dlq_topic) == []
    finally:
        drop(config)
