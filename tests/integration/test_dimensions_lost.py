"""A dimension row's change whose fan-out died with its batch, and then a lost checkpoint.

Real Kafka, Elasticsearch and Spark, each run a `fusion run` process. Items
fire with brand ACME. Brand A is renamed Rotunda, and the run is killed
(SIGKILL to the Spark JVM) right after the bulk write of that row: Elasticsearch
holds Rotunda, but the batch's Kafka transaction, with the rename's fan-out,
never committed. Then A is deleted and written again as Rotunda, and the
checkpoint is lost. The run with ``--rebuild-state`` replays A's three
changes in one batch, finds Rotunda in Elasticsearch already, and must still
fan it out: the row there was written by the uncommitted attempt, so no key
was ever told (indexers.dimensions.fanout.worth_a_fanout).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from tests.integration.pipelines import drop, enriched_docs, read_raw
from tests.integration.runs import crash, finish

ITEMS = 6


def _pipeline(settings: Settings, path: Path) -> Path:
    name = f"dl{uuid.uuid4().hex[:10]}"
    lines = [
        "[pipeline]", f'name = "{name}"', 'key_field = "item_id"',
        f'checkpoint_dir = "{path.parent / "checkpoints"}"',
        'trigger_interval = "200 milliseconds"',
        "[[sources]]", 'name = "item"', f'topic = "{name}.item"', 'key = "id"',
        'references = { brand = "brand_id" }',
        "[[sources]]", 'name = "stock"', f'topic = "{name}.stock"', 'key = "item_id"',
        "[[sources]]", 'name = "brand"', f'topic = "{name}.brand"', 'key = "id"',
        'format = "debezium"', "dimension = true",
        "[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"',
        "[elasticsearch]", f'url = "{settings.elasticsearch.url}"',
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def _record(config: PipelineConfig, source: str, key: str, row: dict[str, Any]) -> Any:
    return (config.topic_of(config.source(source)), key, json.dumps(row).encode())


def test_a_rename_whose_fan_out_died_uncommitted_reaches_its_items_after_a_lost_checkpoint(
    settings: Settings, tmp_path: Path
) -> None:
    config_file = _pipeline(settings, tmp_path / "pipeline.toml")
    config = PipelineConfig.load(config_file, env={})
    kafka_topics.ensure_topics(config)

    def brand(name: str | None) -> Any:
        deleted = {"__deleted": "true"} if name is None else {"name": name, "__deleted": "false"}
        return _record(config, "brand", "A", {"id": "A"} | deleted)

    def brands() -> dict[str, str | None]:
        docs = enriched_docs(settings, config)
        return {key: doc.get("brand", {}).get("name") for key, doc in docs.items()}

    try:
        items = [_record(config, "item", str(i), {"id": i, "brand_id": "A"}) for i in range(ITEMS)]
        stock = [_record(config, "stock", str(i), {"item_id": i, "n": i}) for i in range(ITEMS)]
        produce(config, [brand("ACME"), *items, *stock])
        finish(config, config_file, settings, ITEMS)
        assert set(brands().values()) == {"ACME"}

        # The rename's row written, its batch's transaction (the fan-out) never committed.
        produce(config, [brand("Rotunda")])
        crash(config_file, settings, ["indexer.after_bulk:jvm"], "died", tmp_path)
        assert set(brands().values()) == {"ACME"}, "the killed run told no item"
        produce(config, [brand(None), brand("Rotunda")])
        shutil.rmtree(tmp_path / "checkpoints")

        finish(config, config_file, settings, ITEMS, "--rebuild-state")
        assert brands() == {str(i): "Rotunda" for i in range(ITEMS)}
        fires = [key for key, _, _ in read_raw(settings, config.ready_topic)]
        assert sorted(fires) == sorted(str(i) for i in range(ITEMS)), "each item fired once"
    finally:
        drop(config)
