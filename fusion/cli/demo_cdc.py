"""`fusion demo --cdc`: a shop's tables in PostgreSQL, through Debezium, joined by Fusion.

1. start Kafka, Elasticsearch, PostgreSQL and a Kafka Connect worker with
   Debezium (``fusion infra up --cdc``);
2. start afresh: drop the ``shop`` schema, the connector and the pipeline an
   earlier demo left;
3. create ``shop.orders``, ``shop.payments`` and ``shop.shipments``, each keyed
   by its own column, and fill them (some orders without a payment or a shipment);
4. register Debezium's connector through Connect's REST API: it snapshots the
   tables (``op = r``) and then streams their changes, one topic per table;
5. run the pipeline until every order is enriched, and show one;
6. in the database, update that order's payment and delete its shipment; run
   again until the enriched document shows both, and show it again.
"""

from __future__ import annotations

import json
import os
import time
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.markup import escape

from fusion import pipeline
from fusion.cli.demo import start_afresh
from fusion.core import ConfigError, ExitCode, PipelineConfig
from fusion.elastic import client as es_client
from fusion.infra import Endpoints
from fusion.infra.cdc import (
    PG_DATABASE,
    PG_ROLE,
    LocalPostgres,
    postgres_connector,
    register,
    unregister,
)
from fusion.observe import Figures, Metrics
from fusion.topology import topology_of

ORDERS = 500
SHOWN = 7  # the order the demo shows, changes and shows again
CONNECTOR = "fusion-demo-shop"
SCHEMA = """
DROP SCHEMA IF EXISTS shop CASCADE;
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id int PRIMARY KEY, customer text, items int);
CREATE TABLE shop.payments (order_ref int PRIMARY KEY, method text, cents int);
CREATE TABLE shop.shipments (order_no int PRIMARY KEY, city text, status text);
INSERT INTO shop.orders SELECT n, 'customer ' || n, 1 + n % 5 FROM generate_series(1, {n}) n;
INSERT INTO shop.payments SELECT n, (ARRAY['card', 'cash', 'transfer'])[1 + n % 3], 100 * n
    FROM generate_series(1, {n}) n WHERE n % 17 <> 0;
INSERT INTO shop.shipments SELECT n, (ARRAY['Oslo', 'Rome', 'Lima'])[1 + n % 3], 'packed'
    FROM generate_series(1, {n}) n WHERE n % 13 <> 0;
"""
CHANGES = f"""
UPDATE shop.payments SET cents = cents + 1, method = 'refund' WHERE order_ref = {SHOWN};
DELETE FROM shop.shipments WHERE order_no = {SHOWN};
"""


def example_config() -> Path:
    return Path(str(resources.files("fusion") / "examples" / "shop.toml"))


def run_cdc_demo(endpoints: Endpoints, out: Console, err: Console, state_dir: Path) -> int:
    pg_url, connect_url = endpoints.cdc
    if pg_url is None or connect_url is None:
        raise ConfigError("fusion demo --cdc", "", "the local runtime has no PostgreSQL")
    pg_port, connect_port = urlsplit(pg_url).port or 5432, urlsplit(connect_url).port or 8083
    env = dict(os.environ) | {
        "FUSION_KAFKA_BOOTSTRAP": endpoints.kafka_bootstrap,
        "FUSION_ES_URL": endpoints.es_url,
    }
    config = PipelineConfig.load(example_config(), env=env)
    postgres = LocalPostgres(state_dir)
    with err.status("removing the schema, connector and pipeline of an earlier demo"):
        unregister(connect_port, CONNECTOR)
        postgres.drop_slot(pg_port, "demo")
        start_afresh(config, reset=False)
        postgres.sql(pg_port, SCHEMA.format(n=ORDERS))
    out.print(f"PostgreSQL {pg_url}: shop.orders, shop.payments, shop.shipments, {ORDERS} orders")
    tables = ["shop.orders", "shop.payments", "shop.shipments"]
    connector = postgres_connector(pg_port, PG_DATABASE, "demo", tables, PG_ROLE)
    with err.status("registering Debezium's PostgreSQL connector (it snapshots the tables)"):
        register(connect_port, CONNECTOR, connector)
    out.print(f"Debezium at {connect_url}: topics demo.shop.orders, .payments, .shipments")
    started = time.monotonic()
    metrics = Metrics()
    _run(config, metrics, err, lambda m: Figures(m.counts()).enriched >= ORDERS)
    out.print(f"{ORDERS} orders enriched in {time.monotonic() - started:.1f} s")
    before = _document(config)
    _show(config, "as the database holds it", before, out)
    out.print(f"\n[bold]in PostgreSQL[/]: {escape(' '.join(CHANGES.split()))}")
    postgres.sql(pg_port, CHANGES)

    def changed(_: Metrics) -> bool:
        now = _document(config)
        return now.get("fusion", {}).get("missing") == ["shipments"] and now != before

    _run(config, metrics, err, changed)
    _show(config, "after the update and the delete", _document(config), out)
    out.print(f"\nstop the servers: fusion infra down; the connector: curl -X DELETE "
              f"{connect_url}/connectors/{CONNECTOR}")  # fmt: skip
    return ExitCode.OK


def _run(config: PipelineConfig, metrics: Metrics, err: Console, done: Any) -> None:
    hooks = pipeline.Hooks(done=done, say=lambda line: err.print(escape(line), highlight=False))
    with err.status("running the pipeline"):
        pipeline.execute(config, topology_of(config).select(), metrics, 120.0, hooks)


def _document(config: PipelineConfig) -> dict[str, Any]:
    es = es_client.connect(config.elasticsearch)
    found = es.options(ignore_status=404).get(index=config.enriched_index, id=str(SHOWN))
    return dict(found.get("_source") or {})


def _show(config: PipelineConfig, when: str, doc: dict[str, Any], out: Console) -> None:
    out.print(f"\norder {SHOWN}'s enriched document, {when}:")
    for part, value in doc.items():
        if isinstance(value, dict):
            shown = {k: v for k, v in value.items() if k not in ("enriched_at", "fired_at")}
            out.print(f"  {part:<10} {escape(json.dumps(shown))}", soft_wrap=True)
