"""Orders with their lines gathered into an array, each change to a line re-enriching its order.

Real Kafka, Elasticsearch and Spark: orders and payments keyed by the order
id, and lines keyed by their own id naming their order (rows as Debezium's
ExtractNewRecordState writes them: a delete is ``__deleted = "true"`` and holds
the line's id alone, as PostgreSQL's default replica identity gives it). Lines
arriving before their order wait for it and never hold it back; after the
fire, a line inserted, changed, moved to another order or deleted re-enriches
the orders it left and joined, each time with a higher version; many changes
at once give far fewer re-enrichments; an order of more lines than
``max_children`` holds the first ones and says how many it left out; the
array is ``nested``, so a query matches within one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from fusion.ops import explain
from fusion.ops.reconcile import reconcile
from indexers import order_value
from tests.integration.pipelines import (
    RunningPipeline,
    drop,
    enriched_docs,
    make_config,
    read_topic,
)

CAP = 4  # max_children


def _config(settings: Settings, tmp_path: Path) -> PipelineConfig:
    config = make_config(settings, tmp_path, ["orders", "payments", "lines"])
    data = config.model_dump(mode="python")
    data["sources"][0] |= {"key": "id"}
    data["sources"][1] |= {"key": "order_id"}
    data["sources"][2] |= {
        "key": "line_id", "parent": "order_id", "format": "debezium", "max_children": CAP,
        "fields": {"sku": "keyword", "qty": "long"},
    }  # fmt: skip
    return config.model_validate(data)


def test_orders_hold_their_lines_and_follow_every_change_to_them(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = _config(settings, tmp_path)
    kafka_topics.ensure_topics(config)
    topic = {name: config.topic_of(config.source(name)) for name in config.source_names}

    def order(i: int) -> Any:
        return (topic["orders"], str(i), json.dumps({"id": i, "buyer": f"b{i}"}).encode())

    def payment(i: int) -> Any:
        return (topic["payments"], str(i), json.dumps({"order_id": i, "paid": 10 * i}).encode())

    def line(line_id: int, order_id: Any, sku: str = "X", qty: int = 1) -> Any:
        row = {"line_id": line_id, "order_id": order_id, "sku": sku, "qty": qty}
        return (topic["lines"], str(line_id), json.dumps(row | {"__deleted": "false"}).encode())

    def deleted(line_id: int) -> Any:
        row = {"line_id": line_id, "__deleted": "true"}
        return (topic["lines"], str(line_id), json.dumps(row).encode())

    try:
        # Lines before their order (9 and 10 out of order: they sort as numbers), a line of
        # an order that never comes, and two bad lines.
        produce(config, [line(10, 1), line(9, 1), line(11, 1, "Y", 2), line(50, 3)])
        produce(config, [(topic["lines"], "60", b'{"line_id": 60, "__deleted": "false"}')])
        bad = {"line_id": 61, "order_id": {"id": 1}, "__deleted": "false"}
        produce(config, [(topic["lines"], "61", json.dumps(bad).encode())])
        with RunningPipeline(spark, config) as running:
            docs = lambda: enriched_docs(settings, config)  # noqa: E731

            def lines_of(key: str) -> list[int] | None:
                doc = docs().get(key)
                return None if doc is None else [x["line_id"] for x in doc.get("lines", [])]

            running.wait_for(
                lambda: running.metrics.get(names.COUNTER_KEYS) >= 2, 180, "lines counted"
            )
            assert running.metrics.get(names.COUNTER_FIRED) == 0, "lines alone fire nothing"
            produce(config, [order(1), payment(1), order(2), payment(2)])
            running.wait_for(lambda: lines_of("1") == [9, 10, 11], 180, "order 1 with its lines")
            running.wait_for(lambda: lines_of("2") == [], 60, "order 2 without lines")
            assert docs()["1"]["lines"][2] == {"line_id": 11, "order_id": 1, "sku": "Y", "qty": 2}
            assert "3" not in docs(), "a line of an order that never came is no order"

            es = es_client.connect(config.elasticsearch)
            versions = [es.get(index=config.enriched_index, id="1")["_version"]]

            def changed(key: str, lines: list[int], what: str) -> None:
                running.wait_for(lambda: lines_of(key) == lines, 180, what)
                versions.append(es.get(index=config.enriched_index, id="1")["_version"])

            # After the fire: a line joins order 2, a line of order 1 changes, moves, goes.
            produce(config, [line(12, 2)])
            running.wait_for(lambda: lines_of("2") == [12], 180, "a line joined order 2")
            produce(config, [line(10, 1, qty=5)])
            running.wait_for(
                lambda: docs()["1"]["lines"][1]["qty"] == 5, 180, "line 10 changed in order 1"
            )
            versions.append(es.get(index=config.enriched_index, id="1")["_version"])
            produce(config, [line(9, 2, "Z", 2)])  # moved: the row names its new order alone
            changed("1", [10, 11], "line 9 left order 1")
            running.wait_for(lambda: lines_of("2") == [9, 12], 180, "line 9 joined order 2")
            produce(config, [deleted(11)])
            changed("1", [10], "line 11 deleted")
            assert versions == sorted(set(versions)), f"each version higher: {versions}"

            # Thirty changes of one order's lines at once: far fewer re-enrichments.
            before = len(_updates(settings, config, "1"))
            produce(config, [line(10, 1, qty=q) for q in range(100, 130)])
            running.wait_for(
                lambda: docs()["1"]["lines"][0]["qty"] == 129, 180, "the last of 30 changes"
            )
            assert len(_updates(settings, config, "1")) - before < 15

            # More lines than max_children: the first ones in order, and how many are left out.
            produce(config, [line(100 + n, 4) for n in (5, 3, 1, 4, 2, 6)] + [order(4), payment(4)])
            running.wait_for(
                lambda: lines_of("4") == [101, 102, 103, 104], 180, "order 4's first lines"
            )
            assert docs()["4"]["fusion"]["truncated"] == {"lines": 2}
            running.wait_for(
                lambda: running.metrics.get(names.ENRICHER_TRUNCATED) > 0, 60, "truncation counted"
            )
            metrics = running.metrics

        # A line of sku Z and qty 2 is one line of order 2 (nested: not order 1's X and Y).
        es.indices.refresh(index=config.enriched_index)
        within = {"bool": {"must": [{"term": {"lines.sku": "Z"}}, {"term": {"lines.qty": 2}}]}}
        hits = es.search(index=config.enriched_index, query={"nested": {"path": "lines",
                         "query": within}})["hits"]["hits"]  # fmt: skip
        assert [hit["_id"] for hit in hits] == ["2"]
        assert metrics.get(names.COUNTER_FIRED) == 3, "orders 1, 2 and 4 fired once each"
        # The two bad lines are dead letters naming what they lack.
        reasons = sorted(letter["reason"] for _, letter in read_topic(settings, config.dlq_topic))
        assert reasons == [
            "no parent: key field 'order_id' must be a string or an integer, got {'id': 1}",
            "no parent: missing key field 'order_id'",
        ]
        report = explain.explain(config, explain.gather(spark, config, "4"))
        assert report["children"]["lines"]["in_elasticsearch"] == 6
        assert report["children"]["lines"]["in_enriched_document"] == CAP
        assert report["children"]["lines"]["truncated"] == 2
        assert "lines" not in report["sources"]

        # Lost track of: order 2's document deleted, and a line of order 1 whose ack never
        # came: reconcile writes both, and nothing the second time.
        es.delete(index=config.enriched_index, id="2", refresh=True)
        lost_line = {
            "line_id": 8,
            "order_id": 1,
            "sku": "Q",
            "qty": 3,
            "fusion": {"parent": "1", "order": order_value(8), "ts": 4_102_444_800_000},
        }
        es.index(index=config.index_of(config.source("lines")), id="8", document=lost_line,
                 refresh=True)  # fmt: skip
        found = reconcile(spark, config)
        assert (found.planned, found.enriched) == (2, 2), found
        assert lines_of("1") == [8, 10] and lines_of("2") == [9, 12]
        again = reconcile(spark, config)
        assert (again.up_to_date, again.planned) == (3, 0), "order 4, cut, says so too"
    finally:
        drop(config)


def _updates(settings: Settings, config: PipelineConfig, key: str) -> list[Any]:
    return [event for k, event in read_topic(settings, config.updates_topic) if k == key]
