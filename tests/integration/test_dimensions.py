"""Items joined with the brand their ``brand_id`` names, and a brand's change fanned out.

Real Kafka, Elasticsearch and Spark: items and their stock (keyed by item id),
brands keyed by their own id. An item fires once its stock and its brand are
searchable, whichever came first; a brand renamed re-enriches every item that
names it, over several fan-out pages; an item moving to another brand (one
written earlier) takes that brand's row and is never touched by its old
brand's changes again; a brand deleted leaves its items without it; a key whose
enriched document has a higher version than the counter's count gives (a
forgotten count) still takes the next change.
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
from tests.integration.pipelines import RunningPipeline, drop, enriched_docs, make_config

ITEMS = 12


def _config(settings: Settings, tmp_path: Path) -> PipelineConfig:
    config = make_config(settings, tmp_path, ["item", "stock", "brand"], fanout_page=5)
    data = config.model_dump(mode="python")
    data["sources"][0] |= {"key": "id", "references": {"brand": "brand_id"}}
    data["sources"][1] |= {"key": "item_id"}
    # Brands as Debezium's ExtractNewRecordState writes rows: a delete is __deleted = "true".
    data["sources"][2] |= {"key": "id", "dimension": True, "format": "debezium"}
    return config.model_validate(data)


def _record(config: PipelineConfig, source: str, key: str, row: dict[str, Any] | None) -> Any:
    value = None if row is None else json.dumps(row).encode()
    return (config.topic_of(config.source(source)), key, value)


def test_items_take_their_brand_and_follow_its_changes(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = _config(settings, tmp_path)
    kafka_topics.ensure_topics(config)

    def item(i: int, brand_id: str) -> Any:
        return _record(config, "item", str(i), {"id": i, "name": f"item {i}", "brand_id": brand_id})

    def stock(i: int) -> Any:
        return _record(config, "stock", str(i), {"item_id": i, "count": i * 10})

    def brand(brand_id: str, name: str) -> Any:
        row = {"id": brand_id, "name": name, "__deleted": "false"}
        return _record(config, "brand", brand_id, row)

    try:
        # Brand B first (an early row), items before and after their brand A.
        produce(config, [brand("B", "Bolt")])
        produce(config, [item(i, "A") for i in range(ITEMS)] + [stock(i) for i in range(ITEMS)])
        with RunningPipeline(spark, config) as running:

            def brands() -> dict[str, str | None]:
                docs = enriched_docs(settings, config)
                return {k: d.get("brand", {}).get("name") for k, d in docs.items()}

            running.wait_for(
                lambda: running.metrics.get(names.COUNTER_KEYS) == ITEMS, 180, "items counted"
            )
            assert running.metrics.get(names.COUNTER_FIRED) == 0, "none fires before its brand"
            produce(config, [brand("A", "ACME")])
            running.wait_for(
                lambda: brands() == {str(i): "ACME" for i in range(ITEMS)}, 180, "items with ACME"
            )
            fired = lambda: running.metrics.get(names.COUNTER_FIRED)  # noqa: E731
            running.wait_for(lambda: fired() == ITEMS, 60, "each item's fire counted")

            # A rename: every item re-enriched, over pages of 5 keys.
            # Many versions of A: a move to B (version 1) then lowers the sum of the row versions.
            produce(config, [brand("A", f"Rotunda {n}") for n in range(30)])
            produce(config, [brand("A", "Rotunda")])
            running.wait_for(
                lambda: set(brands().values()) == {"Rotunda"}, 180, "every ACME item renamed"
            )
            # Item 0 moves to B (written long before A's last change), then A changes again.
            produce(config, [item(0, "B")])
            running.wait_for(lambda: brands().get("0") == "Bolt", 180, "item 0 moved to Bolt")
            produce(config, [brand("A", "Rotunda II")])
            running.wait_for(
                lambda: all(brands()[str(i)] == "Rotunda II" for i in range(1, ITEMS)),
                180,
                "A's second rename",
            )
            assert brands()["0"] == "Bolt", "A's change never touches an item that left A"
            # Item 5's document has a version above all the counter counts now, as when its
            # state TTL ran out after more changes (docs/dimensions.md): A's next change
            # must land all the same, a version above it.
            es = es_client.connect(settings.elasticsearch)
            high = 10**9
            es.index(index=config.enriched_index, id="5", version=high, version_type="external",
                     document=enriched_docs(settings, config)["5"], refresh=True)  # fmt: skip
            produce(config, [brand("A", "Rotunda III")])
            running.wait_for(
                lambda: all(brands()[str(i)] == "Rotunda III" for i in range(1, ITEMS)),
                180,
                "A's third rename, item 5 too",
            )
            assert es.get(index=config.enriched_index, id="5")["_version"] == high + 1
            # A deleted: its items lose it (re-enriched without it), item 0 keeps Bolt.
            produce(config, [_record(config, "brand", "A", {"id": "A", "__deleted": "true"})])
            running.wait_for(
                lambda: set(brands().values()) == {None, "Bolt"}, 180, "A's items without it"
            )
            metrics = running.metrics
        assert metrics.get(names.COUNTER_FIRED) == ITEMS, "each item fired once"
        assert metrics.get(names.FANOUT_KEYS) >= 3 * (ITEMS - 1)
        # fusion explain looks the key's brand up by the id its slot holds.
        evidence = explain.gather(spark, config, "0")
        assert evidence.docs["brand"].source == {"id": "B", "name": "Bolt"}
        assert explain.explain(config, evidence)["sources"]["brand"]["in_elasticsearch"]
        docs = enriched_docs(settings, config)
        assert docs["3"]["stock"] == {"item_id": 3, "count": 30}
        assert docs["3"]["item"] == {"id": 3, "name": "item 3", "brand_id": "A"}
        assert docs["3"]["fusion"]["missing"] == ["brand"]
        assert docs["0"]["brand"] == {"id": "B", "name": "Bolt"}
        assert docs["0"]["fusion"]["complete"] is True
    finally:
        drop(config)


def test_status_names_the_oldest_change_whose_fan_out_waits(
    settings: Settings, tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    from acks.fanout import FanoutRequest
    from fusion.kafka.fanout_backlog import oldest_pending
    from fusion.kafka.lag import stage_markers
    from fusion.topology import topology_of
    from indexers.dimensions.fanout import request_records

    config = _config(settings, tmp_path)
    inputs = topology_of(config).inputs()
    kafka_topics.ensure_topics(config)
    try:
        times = [datetime(2026, 1, 1, 10, m, tzinfo=UTC) for m in (5, 1, 9)]
        requests = [
            FanoutRequest(dimension="brand", id=b, version=1, digest="d", requested_at=at)
            for b, at in zip("ABC", times, strict=True)
        ]
        produce(config, request_records(config.fanout_topic, requests))
        # No query worked any of them: the oldest is the 10:01 change, whichever partition.
        assert oldest_pending(config, stage_markers(config, inputs)) == times[1]
        no_dimensions = config.model_copy(update={"sources": config.sources[:2]})
        assert oldest_pending(no_dimensions, stage_markers(config, inputs)) is None
    finally:
        drop(config)
