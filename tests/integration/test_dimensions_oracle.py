"""The database is the oracle of a foreign-key join: items with their brand and tax status.

A real PostgreSQL read by real Debezium: ``items`` (``brand_id``,
``tax_status_id``), ``inventory`` keyed by item id, and the dimensions
``brands`` and ``tax_statuses``. A random workload moves items between brands,
renames brands, deletes brands and tax statuses and inserts them again, some
of it before the connector starts (its snapshot); `fusion run` is killed
(SIGKILL) while fan-outs are under way (pages of 10 keys) and started again.
Once Fusion has read every change, the enriched index must be PostgreSQL's
``items LEFT JOIN brands LEFT JOIN tax_statuses JOIN inventory``, field by
field. The second case also loses the checkpoint with the kill: the run after
it rebuilds the counter's state, slots included (``--rebuild-state``), and no
key fires twice.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from tests.integration.conftest import Cdc
from tests.integration.oracles import (
    SqlWorkload,
    captured,
    differences,
    fired_twice,
    joined_rows,
    killed_holding_a_fanout_page,
    new_schema,
    pipeline_head,
    settle,
)
from tests.integration.pipelines import drop

ITEMS = range(1, 61)
BRANDS = range(1, 5)
TAXES = range(1, 3)
PARTS = ("item", "inventory", "brand", "tax_status")
TABLES = {
    "items": "id int PRIMARY KEY, name text, brand_id int, tax_status_id int",
    "inventory": "item_id int PRIMARY KEY, count int",
    "brands": "id int PRIMARY KEY, name text",
    "tax_statuses": "id int PRIMARY KEY, rate int",
}


class Workload(SqlWorkload):
    """Random changes: items move, brands and tax statuses change, go and come back."""

    def __init__(self, cdc: Cdc, schema: str, seed: int) -> None:
        super().__init__(cdc, schema, seed)
        self.brands: set[int] = set()
        self.taxes: set[int] = set()

    def setup(self) -> None:
        s = self.schema
        for brand in BRANDS:
            self._sql(f"INSERT INTO {s}.brands VALUES ({brand}, 'brand {brand}')")
            self.brands.add(brand)
        self._sql(f"INSERT INTO {s}.tax_statuses VALUES (1, 20)")
        self.taxes.add(1)
        for item in ITEMS:
            tax = "NULL" if item % 7 == 0 else self.rng.choice(list(TAXES))
            brand = self.rng.choice(list(BRANDS))
            self._sql(f"INSERT INTO {s}.items VALUES ({item}, 'item {item}', {brand}, {tax})")
            self._sql(f"INSERT INTO {s}.inventory VALUES ({item}, {self.rng.randint(0, 99)})")

    def statement(self) -> str:
        s, roll = self.schema, self.rng.random()
        if roll < 0.35:  # an item moves (sometimes to a brand not there now)
            item, brand = self.rng.choice(list(ITEMS)), self.rng.choice(list(BRANDS))
            return f"UPDATE {s}.items SET brand_id = {brand} WHERE id = {item}"
        if roll < 0.6:  # a rename: every item of the brand changes
            brand = self.rng.choice(list(BRANDS))
            return f"UPDATE {s}.brands SET name = name || '+' WHERE id = {brand}"
        if roll < 0.7:  # stock
            item = self.rng.choice(list(ITEMS))
            return f"UPDATE {s}.inventory SET count = count + 1 WHERE item_id = {item}"
        if roll < 0.85:  # a brand goes, or comes back
            return self._toggle("brands", self.brands, self.rng.choice(list(BRANDS)), "'back'")
        return self._toggle("tax_statuses", self.taxes, self.rng.choice(list(TAXES)), "7")

    def _toggle(self, table: str, rows: set[int], key: int, value: str) -> str:
        if key in rows:
            rows.discard(key)
            return f"DELETE FROM {self.schema}.{table} WHERE id = {key}"
        rows.add(key)
        return f"INSERT INTO {self.schema}.{table} VALUES ({key}, {value})"


def _pipeline(settings: Settings, path: Path, schema: str, prefix: str) -> Path:
    topic = f"{prefix}.{schema}"
    lines = [
        *pipeline_head(prefix, "item_id", path.parent / "checkpoints"),
        "fanout_page = 10",
        "[[sources]]",
        'name = "item"',
        f'topic = "{topic}.items"',
        'key = "id"',
        'format = "debezium"',
        'references = { brand = "brand_id", tax_status = "tax_status_id" }',
        "[[sources]]",
        'name = "inventory"',
        f'topic = "{topic}.inventory"',
        'key = "item_id"',
        'format = "debezium"',
    ]
    for name, table in (("brand", "brands"), ("tax_status", "tax_statuses")):
        lines += ["[[sources]]", f'name = "{name}"', f'topic = "{topic}.{table}"', 'key = "id"']
        lines += ['format = "debezium"', "dimension = true", "required = false"]
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _database_join(cdc: Cdc, schema: str) -> dict[str, dict[str, Any]]:
    """PostgreSQL's own join: item id -> {part: row} (a part only where its row is)."""
    s = schema
    query = f"""
        SELECT json_build_object('k', i.id, 'item', row_to_json(i), 'inventory', row_to_json(v),
            'brand', row_to_json(b), 'tax_status', row_to_json(t))
        FROM {s}.items i LEFT JOIN {s}.brands b ON b.id = i.brand_id
        LEFT JOIN {s}.tax_statuses t ON t.id = i.tax_status_id
        JOIN {s}.inventory v ON v.item_id = i.id"""
    return joined_rows(cdc, query)


@pytest.mark.parametrize("checkpoint", ["kept", "lost"])
def test_the_enriched_items_are_the_databases_foreign_key_join_through_a_kill(
    checkpoint: str, cdc: Cdc, settings: Settings, tmp_path: Path
) -> None:
    schema = new_schema(cdc, TABLES)
    prefix = f"dim{uuid.uuid4().hex[:8]}"
    workload = Workload(cdc, schema, seed=40)
    workload.setup()
    workload.run(20)  # before the connector: its snapshot reads them (op r)
    tables = [f"{schema}.{table}" for table in TABLES]
    config_file = _pipeline(settings, tmp_path / "pipeline.toml", schema, prefix)
    config = PipelineConfig.load(config_file, env={})
    with captured(cdc, prefix, tables):
        try:
            run_in = (config_file, settings, tmp_path, config)
            # kill -9 with a fan-out's page done and not published
            killed_holding_a_fanout_page(run_in, lambda: workload.run(40, pause=0.05))
            workload.run(60, pause=0.01)
            expected = _database_join(cdc, schema)
            args = ()
            if checkpoint == "lost":
                shutil.rmtree(tmp_path / "checkpoints")
                args = ("--rebuild-state",)
            settle(
                config_file, settings, tmp_path, config,
                lambda docs: differences(expected, docs, PARTS), 360, *args,
            )  # fmt: skip
            assert not (twice := fired_twice(settings, config)), f"fired twice: {twice}"
        finally:
            drop(config)
