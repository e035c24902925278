"""The database is the oracle: a random workload on a real PostgreSQL, read by real Debezium.

Three tables of a retail order, each keyed by its own column (``orders.id``,
``payments.order_ref``, ``shipments.order_no``), some rows there before the
connector starts (its snapshot, ``op = r``), then inserts, updates, deletes,
re-inserts and primary-key changes of orders while `fusion run` runs; the run
is killed (SIGKILL) in the middle of the workload and started again. Once
Fusion has read every change, the enriched index must be PostgreSQL's own
``FULL JOIN`` of the three tables: each key's parts equal to its rows field
by field, no part where a row is missing, no document where every row is gone.

Every source is optional (``required = false``): a key fires on its first
row, and each change after that re-enriches it, as a table's join does.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.infra.cdc.connect import avro_converter
from tests.integration.conftest import Cdc
from tests.integration.oracles import (
    SqlWorkload,
    captured,
    differences,
    joined_rows,
    pipeline_head,
    settle,
    wait_for_work,
)
from tests.integration.pipelines import drop, read_raw
from tests.integration.runs import kill_group, start_run

TABLES = {"orders": "id", "payments": "order_ref", "shipments": "order_no"}
COLUMNS = {
    "orders": ("customer", "items"),
    "payments": ("method", "cents"),
    "shipments": ("city", "parcels"),
}
KEYS = range(1, 41)


class Workload(SqlWorkload):
    """Random changes of the three tables, applied through psql; it knows what each holds."""

    def __init__(self, cdc: Cdc, schema: str, seed: int) -> None:
        super().__init__(cdc, schema, seed)
        self.rows: dict[str, set[int]] = {table: set() for table in TABLES}
        self.next_key = max(KEYS) + 1

    def _values(self, key: int) -> str:
        word = self.rng.choice(["Oslo", "Rome", "card", "cash", "Ada", "Bo", "", "ünï", "O'Neil"])
        return f"{key}, '{word.replace(chr(39), chr(39) * 2)}', {self.rng.randint(0, 10_000)}"

    def statement(self) -> str:
        table = self.rng.choice(list(TABLES))
        column, (text, number) = TABLES[table], COLUMNS[table]
        present = sorted(self.rows[table])
        where = f"{self.schema}.{table}"
        roll = self.rng.random()
        if not present or roll < 0.35:
            key = self.rng.choice([k for k in KEYS if k not in self.rows[table]] or [self._new()])
            self.rows[table].add(key)
            return f"INSERT INTO {where} VALUES ({self._values(key)})"
        key = self.rng.choice(present)
        if roll < 0.7:
            value = self.rng.randint(0, 10_000)
            change = f"{number} = {value}, {text} = {text} || '+'"
            return f"UPDATE {where} SET {change} WHERE {column} = {key}"
        if roll < 0.93 or table != "orders":
            self.rows[table].discard(key)
            return f"DELETE FROM {where} WHERE {column} = {key}"
        new = self._new()  # a primary-key change: Debezium's delete of key, create of new
        self.rows[table].discard(key)
        self.rows[table].add(new)
        return f"UPDATE {where} SET {column} = {new} WHERE {column} = {key}"

    def _new(self) -> int:
        self.next_key += 1
        return self.next_key


def _create(cdc: Cdc, schema: str) -> None:
    cdc.sql(f"CREATE SCHEMA {schema}")
    for table, key in TABLES.items():
        text, number = COLUMNS[table]
        cdc.sql(f"CREATE TABLE {schema}.{table} ({key} int PRIMARY KEY, {text} text, {number} int)")


def _pipeline(
    settings: Settings, path: Path, schema: str, prefix: str, registry: str | None = None
) -> Path:
    form = "debezium-avro" if registry else "debezium"
    lines = [
        *pipeline_head(prefix, "order_id", path.parent / "checkpoints"),
    ]
    for table, key in TABLES.items():
        lines += ["[[sources]]", f'name = "{table}"', f'topic = "{prefix}.{schema}.{table}"']
        lines += [f'key = "{key}"', f'format = "{form}"', "required = false"]
    lines += ["[kafka]", f'bootstrap = "{settings.kafka.bootstrap}"']
    lines += ["[elasticsearch]", f'url = "{settings.elasticsearch.url}"']
    if registry:
        lines += ["[registry]", f'url = "{registry}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _database_join(cdc: Cdc, schema: str) -> dict[str, dict[str, Any]]:
    """PostgreSQL's own join of the three tables: key -> {table: row} (rows that exist)."""
    o, p, s = (f"{schema}.{table}" for table in TABLES)
    query = f"""
        SELECT json_build_object('k', coalesce(o.id, p.order_ref, s.order_no),
            'orders', row_to_json(o), 'payments', row_to_json(p), 'shipments', row_to_json(s))
        FROM {o} o FULL JOIN {p} p ON p.order_ref = o.id
        FULL JOIN {s} s ON s.order_no = coalesce(o.id, p.order_ref)"""
    return joined_rows(cdc, query)


def test_the_enriched_index_is_the_databases_join_through_a_kill(
    cdc: Cdc, settings: Settings, tmp_path: Path
) -> None:
    schema = f"s{uuid.uuid4().hex[:8]}"
    prefix = f"cdc{uuid.uuid4().hex[:8]}"
    _create(cdc, schema)
    workload = Workload(cdc, schema, seed=43)
    workload.run(60)  # there before the connector: its snapshot reads them (op r)
    tables = [f"{schema}.{table}" for table in TABLES]
    config_file = _pipeline(settings, tmp_path / "pipeline.toml", schema, prefix)
    config = PipelineConfig.load(config_file, env={})
    with captured(cdc, prefix, tables):
        try:
            run = start_run(config_file, settings, [], tmp_path, "--stop-when-idle", "600")
            try:
                workload.run(60, pause=0.02)
                wait_for_work(run, settings, config, 180)
                workload.run(60, pause=0.02)
            finally:
                kill_group(run)  # kill -9 in the middle of the workload
            workload.run(120, pause=0.01)
            expected = _database_join(cdc, schema)
            docs = settle(
                config_file, settings, tmp_path, config,
                lambda docs: differences(expected, docs, TABLES), 300,
            )  # fmt: skip
            for key, doc in docs.items():
                gone = doc["fusion"]["missing"]
                assert all(table not in expected[key] for table in gone), (key, gone)
        finally:
            drop(config)


def test_debeziums_avro_change_events_through_a_real_registry_are_the_databases_join(
    cdc: Cdc, registry: str, settings: Settings, tmp_path: Path
) -> None:
    """``format = "debezium-avro"``: the events as Debezium's Avro converter writes them
    (Apicurio's, in the registry's wire format), snapshot, updates, deletes and key changes."""
    schema = f"s{uuid.uuid4().hex[:8]}"
    prefix = f"avro{uuid.uuid4().hex[:8]}"
    _create(cdc, schema)
    workload = Workload(cdc, schema, seed=44)
    workload.run(40)  # the snapshot's (op r)
    tables = [f"{schema}.{table}" for table in TABLES]
    config_file = _pipeline(settings, tmp_path / "pipeline.toml", schema, prefix, registry)
    config = PipelineConfig.load(config_file, env={})
    with captured(cdc, prefix, tables, avro_converter(registry)):
        try:
            workload.run(80, pause=0.01)
            expected = _database_join(cdc, schema)
            settle(
                config_file, settings, tmp_path, config,
                lambda docs: differences(expected, docs, TABLES), 300,
            )  # fmt: skip
            # Every record was Avro in the wire format, none a dead letter.
            assert read_raw(settings, config.dlq_topic) == []
            values = [v for t in tables for _, v, _ in read_raw(settings, f"{prefix}.{t}") if v]
            assert values and all(value[0] == 0 for value in values)
        finally:
            drop(config)
