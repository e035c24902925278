"""The database is the oracle of a chain of joins and of one table joined twice.

A real PostgreSQL read by real Debezium: ``orders`` name an item, a buyer
and a seller; ``items`` name their brand, ``brands`` their company; buyers and
sellers are both rows of ``users``. The enriched order holds its item with the
item's brand inside it and the brand's company inside that (a chain of three
references), and its buyer and seller. A random workload renames and moves
rows at every level, sets references to null and back, deletes rows and
inserts them again, some of it before the connector starts (its snapshot),
and ends with a change at each level that nothing below it follows;
`fusion run` is killed (SIGKILL) with a fan-out's page searched and not yet
published, and started again. Once Fusion has read every change, the enriched
index must be PostgreSQL's own join, field by field. The second case also
loses the checkpoint with the kill: the run after it rebuilds the counter's
state, chains' slots included (``--rebuild-state``), and no order fires twice.
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

ORDERS = range(1, 61)
ROWS = {"items": range(1, 13), "brands": range(1, 5), "companies": range(1, 4)}
USERS = range(1, 7)
PARTS = ("order", "item", "buyer", "seller")
TABLES = {
    "orders": "id int PRIMARY KEY, item_id int, buyer_id int, seller_id int, qty int",
    "items": "id int PRIMARY KEY, name text, brand_id int",
    "brands": "id int PRIMARY KEY, name text, company_id int",
    "companies": "id int PRIMARY KEY, name text",
    "users": "id int PRIMARY KEY, name text",
}
# Each table of rows, and the column by which it names the next (None: the end of the chain).
NEXT = {"items": ("brand_id", "brands"), "brands": ("company_id", "companies"), "companies": None}


class Workload(SqlWorkload):
    """Random changes at every level: renames, moves, nulls, deletes and inserts again."""

    def __init__(self, cdc: Cdc, schema: str, seed: int) -> None:
        super().__init__(cdc, schema, seed)
        self.there: dict[str, set[int]] = {table: set() for table in (*ROWS, "users")}

    def setup(self) -> None:
        for table in ("companies", "brands", "items"):
            for key in ROWS[table]:
                self._sql(self._insert(table, key, "0"))
        for user in USERS:
            self._sql(self._insert("users", user, "0"))
        for order in ORDERS:
            item, buyer, seller = self._pick("items"), self._pick("users"), self._pick("users")
            self._sql(
                f"INSERT INTO {self.schema}.orders VALUES ({order}, {item}, {buyer}, {seller}, 1)"
            )

    def statement(self) -> str:
        s, roll = self.schema, self.rng.random()
        table = self.rng.choice([*ROWS, "users"])
        keys = ROWS.get(table, USERS)
        if roll < 0.3:  # a rename, at any level: every order reaching the row changes
            key = self.rng.choice(list(keys))
            return f"UPDATE {s}.{table} SET name = name || '+' WHERE id = {key}"
        if roll < 0.55:  # a move at any level (sometimes to a row not there now, or to none)
            return self._move()
        if roll < 0.65:  # an order's own change
            order = self.rng.choice(list(ORDERS))
            return f"UPDATE {s}.orders SET qty = qty + 1 WHERE id = {order}"
        key = self.rng.choice(list(keys))  # a row goes, or comes back with other content
        if key in self.there[table]:
            self.there[table].discard(key)
            return f"DELETE FROM {s}.{table} WHERE id = {key}"
        return self._insert(table, key, "1")

    def last_word(self) -> None:
        """A change at each level that nothing below it changes after: an item moves, a
        company is renamed, a user too, and last a brand moves to another company (its items'
        orders take that company through the brand alone)."""
        s = self.schema
        self._sql(f"UPDATE {s}.items SET brand_id = 1 WHERE id = 1")
        self._sql(f"INSERT INTO {s}.brands VALUES (1, 'brands 1 2', 2) ON CONFLICT (id) DO "
                  "UPDATE SET company_id = 2")  # fmt: skip
        self._sql(f"INSERT INTO {s}.companies VALUES (3, 'companies 3 2') ON CONFLICT (id) DO "
                  "UPDATE SET name = companies.name || '!'")  # fmt: skip
        self._sql(f"UPDATE {s}.users SET name = name || '!'")
        self._sql(f"UPDATE {s}.brands SET company_id = 3 WHERE id = 1")

    def _move(self) -> str:
        s, level = self.schema, self.rng.choice(["order", "buyer", "seller", "items", "brands"])
        if level in ("order", "buyer", "seller"):
            column = {"order": "item_id", "buyer": "buyer_id", "seller": "seller_id"}[level]
            target = "items" if level == "order" else "users"
            order = self.rng.choice(list(ORDERS))
            return f"UPDATE {s}.orders SET {column} = {self._pick(target)} WHERE id = {order}"
        column, target = NEXT[level] or ("", "")
        key = self.rng.choice(list(ROWS[level]))
        return f"UPDATE {s}.{level} SET {column} = {self._pick(target)} WHERE id = {key}"

    def _pick(self, table: str) -> str:
        """A row's id, or NULL now and then (a reference to none)."""
        keys = list(ROWS.get(table, USERS))
        return "NULL" if self.rng.random() < 0.1 else str(self.rng.choice(keys))

    def _insert(self, table: str, key: int, generation: str) -> str:
        self.there[table].add(key)
        name = f"'{table} {key} {generation}'"
        chain = NEXT.get(table)
        if chain is None:
            return f"INSERT INTO {self.schema}.{table} VALUES ({key}, {name})"
        return f"INSERT INTO {self.schema}.{table} VALUES ({key}, {name}, {self._pick(chain[1])})"


def _pipeline(settings: Settings, path: Path, schema: str, prefix: str) -> Path:
    topic = f"{prefix}.{schema}"
    user = '{ dimension = "user", field = "'
    lines = [
        *pipeline_head(prefix, "order_id", path.parent / "checkpoints"),
        "fanout_page = 10",
        "[[sources]]",
        'name = "order"',
        f'topic = "{topic}.orders"',
        'key = "id"',
        'format = "debezium"',
        f'references = {{ item = "item_id", buyer = {user}buyer_id" }}, '
        f'seller = {user}seller_id" }} }}',
    ]
    for name, table, refs in (
        ("item", "items", 'brand = "brand_id"'),
        ("brand", "brands", 'company = "company_id"'),
        ("company", "companies", ""),
        ("user", "users", ""),
    ):
        lines += ["[[sources]]", f'name = "{name}"', f'topic = "{topic}.{table}"', 'key = "id"']
        lines += ['format = "debezium"', "dimension = true", "required = false"]
        lines += [f"references = {{ {refs} }}"] * bool(refs)
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _database_join(cdc: Cdc, schema: str) -> dict[str, dict[str, Any]]:
    """PostgreSQL's own join: order id -> {part: row}, a chain's row inside the row naming it
    (where that row is there), as the enriched order holds them."""
    s = schema
    query = f"""
        SELECT json_build_object('k', o.id, 'order', row_to_json(o),
            'item', CASE WHEN i.id IS NOT NULL THEN to_jsonb(i) || CASE WHEN b.id IS NOT NULL
                THEN jsonb_build_object('brand', to_jsonb(b) || CASE WHEN c.id IS NOT NULL
                    THEN jsonb_build_object('company', to_jsonb(c)) ELSE '{{}}' END)
                ELSE '{{}}' END END,
            'buyer', row_to_json(ub), 'seller', row_to_json(us))
        FROM {s}.orders o LEFT JOIN {s}.items i ON i.id = o.item_id
        LEFT JOIN {s}.brands b ON b.id = i.brand_id
        LEFT JOIN {s}.companies c ON c.id = b.company_id
        LEFT JOIN {s}.users ub ON ub.id = o.buyer_id
        LEFT JOIN {s}.users us ON us.id = o.seller_id"""
    return joined_rows(cdc, query)


@pytest.mark.parametrize("checkpoint", ["kept", "lost"])
def test_the_enriched_orders_are_the_databases_chained_join_through_a_kill(
    checkpoint: str, cdc: Cdc, settings: Settings, tmp_path: Path
) -> None:
    schema = new_schema(cdc, TABLES)
    prefix = f"chn{uuid.uuid4().hex[:8]}"
    workload = Workload(cdc, schema, seed=57)
    workload.setup()
    workload.run(20)  # before the connector: its snapshot reads them (op r)
    tables = [f"{schema}.{table}" for table in TABLES]
    config_file = _pipeline(settings, tmp_path / "pipeline.toml", schema, prefix)
    config = PipelineConfig.load(config_file, env={})
    assert config.slots == ("buyer", "item", "item/brand", "item/brand/company", "seller")
    with captured(cdc, prefix, tables):
        try:
            run_in = (config_file, settings, tmp_path, config)
            # kill -9 with a fan-out's page done and not published
            killed_holding_a_fanout_page(run_in, lambda: workload.run(40, pause=0.05))
            workload.run(60, pause=0.01)
            workload.last_word()
            expected = _database_join(cdc, schema)
            args = ()
            if checkpoint == "lost":
                shutil.rmtree(tmp_path / "checkpoints")
                args = ("--rebuild-state",)
            settle(
                config_file, settings, tmp_path, config,
                lambda docs: differences(expected, docs, PARTS), 360, *args,
            )  # fmt: skip
            if checkpoint == "kept":
                # Caught up, a company renamed alone: its orders learn of it only up the
                # chain, through the brands naming it and the items naming those.
                cdc.sql(f"UPDATE {schema}.companies SET name = name || ' (renamed)'")
                expected = _database_join(cdc, schema)
                settle(
                    config_file, settings, tmp_path, config,
                    lambda docs: differences(expected, docs, PARTS), 240,
                )  # fmt: skip
            assert not (twice := fired_twice(settings, config)), f"fired twice: {twice}"
        finally:
            drop(config)
