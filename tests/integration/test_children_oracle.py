"""The database is the oracle of a one-to-many join: orders with their payment and their lines.

A real PostgreSQL read by real Debezium: ``orders``, ``payments`` keyed by the
order, and ``order_lines`` (own id, ``order_id``, ``sku``, ``qty``, ``price
numeric``) with PostgreSQL's default replica identity, so an update's event
carries no ``before`` row and a delete's the line's id alone. A snapshot, then
a random workload: lines inserted, changed, moved between orders and deleted;
orders deleted and inserted again; one order given 5,000 lines in one
transaction. `fusion run` is killed (SIGKILL) in the middle of the workload,
and a second process of the pipeline, waiting on the first's lease, takes
over and goes on; once it caught up it is killed too, the checkpoint is lost,
the workload goes on, and a new process rebuilds the counter's state
(``--rebuild-state``). Once caught up, the
enriched index must equal PostgreSQL's own ``json_agg(l ORDER BY l.line_id)``
join field by field, and no key fired twice but after its order's delete.
"""

from __future__ import annotations

import shutil
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from tests.integration.conftest import Cdc
from tests.integration.oracles import (
    Docs,
    SqlWorkload,
    captured,
    differences,
    joined_rows,
    new_schema,
    pipeline_head,
    settle,
    wait_for_work,
)
from tests.integration.pipelines import drop, read_topic
from tests.integration.runs import kill_group, start_run

ORDERS = range(1, 31)
BIG = 999  # the order given 5,000 lines at once
PARTS = ("orders", "payments", "order_lines")
TABLES = {
    "orders": "id int PRIMARY KEY, buyer text",
    "payments": "order_id int PRIMARY KEY, amount int",
    "order_lines": "line_id int PRIMARY KEY, order_id int, sku text, qty int, price numeric(10,2)",
}


class Workload(SqlWorkload):
    """Random changes to orders and their lines; it knows which rows are there."""

    def __init__(self, cdc: Cdc, schema: str, seed: int) -> None:
        super().__init__(cdc, schema, seed)
        self.orders: set[int] = set()
        self.lines: set[int] = set()
        self.next_line = 1

    def setup(self) -> None:
        s = self.schema
        for order in ORDERS:
            self._sql(f"INSERT INTO {s}.orders VALUES ({order}, 'buyer {order}')")
            self._sql(f"INSERT INTO {s}.payments VALUES ({order}, {order * 10})")
            self.orders.add(order)
        self._sql(f"INSERT INTO {s}.orders VALUES ({BIG}, 'big')")
        self._sql(f"INSERT INTO {s}.payments VALUES ({BIG}, 1)")
        for _ in range(60):
            self._sql(self._insert_line())

    def _insert_line(self) -> str:
        line, self.next_line = self.next_line, self.next_line + 1
        self.lines.add(line)
        order = self.rng.choice([*ORDERS, 77])  # 77: an order that never comes
        price = f"{self.rng.randint(0, 9999) / 100:.2f}"
        sku = self.rng.choice(["A", "B", "ünï", "O''Neil"])
        return (
            f"INSERT INTO {self.schema}.order_lines VALUES "
            f"({line}, {order}, '{sku}', {self.rng.randint(1, 9)}, {price})"
        )

    def statement(self) -> str:
        s, roll = self.schema, self.rng.random()
        lines = sorted(self.lines)
        if roll < 0.25 or not lines:
            return self._insert_line()
        line = self.rng.choice(lines)
        if roll < 0.5:  # a line changes
            change = "qty = qty + 1, price = price + 1"
            return f"UPDATE {s}.order_lines SET {change} WHERE line_id = {line}"
        if roll < 0.75:  # a line moves to another order
            order = self.rng.choice(list(ORDERS))
            return f"UPDATE {s}.order_lines SET order_id = {order} WHERE line_id = {line}"
        if roll < 0.9:  # a line goes
            self.lines.discard(line)
            return f"DELETE FROM {s}.order_lines WHERE line_id = {line}"
        order = self.rng.choice(list(ORDERS))  # an order goes, or comes back
        if order in self.orders:
            self.orders.discard(order)
            return f"DELETE FROM {s}.orders WHERE id = {order}"
        self.orders.add(order)
        return f"INSERT INTO {s}.orders VALUES ({order}, 'again {order}')"

    def big_order(self) -> None:
        """5,000 lines of one order, in one transaction."""
        first = 1_000_000
        self._sql(
            f"INSERT INTO {self.schema}.order_lines SELECT g, {BIG}, 'S', 1, 1.50 "
            f"FROM generate_series({first}, {first + 4_999}) g"
        )


def _pipeline(settings: Settings, path: Path, schema: str, prefix: str) -> Path:
    topic = f"{prefix}.{schema}"
    lines = [
        *pipeline_head(prefix, "order_id", path.parent / "checkpoints"),
        'on_delete = "delete"',  # an order deleted: its enriched document goes
    ]
    for name, key in (("orders", "id"), ("payments", "order_id")):
        lines += ["[[sources]]", f'name = "{name}"', f'topic = "{topic}.{name}"']
        lines += [f'key = "{key}"', 'format = "debezium"']
    lines += ["[[sources]]", 'name = "order_lines"', f'topic = "{topic}.order_lines"']
    lines += ['key = "line_id"', 'parent = "order_id"', 'format = "debezium"']
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _database_join(cdc: Cdc, schema: str) -> Docs:
    """PostgreSQL's own join: order id -> {part: row}, the lines in line_id order."""
    s = schema
    line = "json_build_object('line_id', l.line_id, 'order_id', l.order_id, 'sku', l.sku, " \
        "'qty', l.qty, 'price', l.price::text)"  # fmt: skip
    query = f"""
        SELECT json_build_object('k', o.id, 'orders', row_to_json(o), 'payments', row_to_json(p),
            'order_lines', (SELECT json_agg({line} ORDER BY l.line_id)
                            FROM {s}.order_lines l WHERE l.order_id = o.id))
        FROM {s}.orders o JOIN {s}.payments p ON p.order_id = o.id"""
    return joined_rows(cdc, query)


def _differences(expected: Docs, docs: Docs) -> list[str]:
    # An order without lines: json_agg's null is left out of the join, [] of the document.
    held = {key: {k: v for k, v in doc.items() if v != []} for key, doc in docs.items()}
    return differences(expected, held, PARTS)


def test_the_enriched_orders_are_the_databases_one_to_many_join_through_kills(
    cdc: Cdc, settings: Settings, tmp_path: Path
) -> None:
    schema = new_schema(cdc, TABLES)
    prefix = f"kid{uuid.uuid4().hex[:8]}"
    workload = Workload(cdc, schema, seed=56)
    workload.setup()
    workload.run(30)  # before the connector: its snapshot reads them (op r)
    tables = [f"{schema}.{table}" for table in TABLES]
    config_file = _pipeline(settings, tmp_path / "pipeline.toml", schema, prefix)
    config = PipelineConfig.load(config_file, env={})

    def joined(docs: Docs) -> list[str]:
        return _differences(_database_join(cdc, schema), docs)

    with captured(cdc, prefix, tables):
        second = None
        try:
            run = start_run(config_file, settings, [], tmp_path, "--stop-when-idle", "600")
            try:
                wait_for_work(run, settings, config, 240)
                workload.run(60, pause=0.02)
                # A second process of the same pipeline waits on the first's lease, and
                # takes over at once when the first is killed.
                second = start_run(config_file, settings, [], tmp_path, "--stop-when-idle", "600")
                workload.big_order()
                workload.run(20, pause=0.02)
            finally:
                kill_group(run)  # kill -9 with changes in flight
            workload.run(40, pause=0.01)
            assert len(_database_join(cdc, schema)[str(BIG)]["order_lines"]) >= 5_000
            settle(config_file, settings, tmp_path, config, joined, 360, running=second)
            # Killed once more, the checkpoint lost: more changes, then the state rebuilt.
            shutil.rmtree(tmp_path / "checkpoints")
            workload.run(40, pause=0.01)
            settle(config_file, settings, tmp_path, config, joined, 360, "--rebuild-state")
            _assert_fired_once_per_life(settings, config)
        finally:
            if second is not None:
                kill_group(second)
            drop(config)


def _assert_fired_once_per_life(settings: Settings, config: PipelineConfig) -> None:
    """No key fired twice, but once more after each delete of its order (its document went)."""
    fires = Counter(key for key, _ in read_topic(settings, config.ready_topic))
    updates: list[tuple[Any, Any]] = read_topic(settings, config.updates_topic)
    deletes = Counter(key for key, event in updates if event.get("kind") == "deleted")
    twice = sorted(key for key, n in fires.items() if n > 1 + deletes[key])
    assert not twice, f"fired twice: {twice}"
