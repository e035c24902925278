"""What the database-oracle tests share: a connector's life, a run at work, a run that settles.

Each test runs a workload on a real PostgreSQL read by real Debezium, kills
`fusion run` in the middle, starts it again and then compares the enriched
index with the database's own join (its ``differences``).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from elasticsearch import NotFoundError

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.infra.cdc.connect import postgres_connector, register, unregister
from fusion.infra.cdc.postgres import PG_DATABASE, PG_ROLE
from tests.integration.conftest import Cdc
from tests.integration.pipelines import enriched_docs, read_raw
from tests.integration.runs import kill_group, start_run

Docs = dict[str, dict[str, Any]]


@contextmanager
def captured(
    cdc: Cdc, prefix: str, tables: list[str], converter: dict[str, str] | None = None
) -> Iterator[None]:
    """Debezium's connector on ``tables``, topics ``<prefix>.<schema>.<table>``; gone after.
    ``converter``: its value converter's settings, if not the worker's JSON."""
    connector = postgres_connector(cdc.pg_port, PG_DATABASE, prefix, tables, PG_ROLE)
    connector |= converter or {}
    register(cdc.connect_port, prefix, connector)
    try:
        yield
    finally:
        unregister(cdc.connect_port, prefix)
        cdc.postgres.drop_slot(cdc.pg_port, prefix)


def enriched_so_far(settings: Settings, config: PipelineConfig) -> Docs:
    try:
        return enriched_docs(settings, config)
    except NotFoundError:
        return {}  # the run has not created its indexes yet


def wait_for_work(run: Any, settings: Settings, config: PipelineConfig, seconds: float) -> None:
    """Until the run enriched something (it is at work), failing if it stopped or took long."""
    deadline = time.monotonic() + seconds
    while not enriched_so_far(settings, config):
        assert run.poll() is None and time.monotonic() < deadline, "nothing enriched"
        time.sleep(0.5)


def settle(
    config_file: Path,
    settings: Settings,
    tmp_path: Path,
    config: PipelineConfig,
    differences: Callable[[Docs], list[str]],
    seconds: float,
    *args: str,
    running: Any = None,
) -> Docs:
    """Run the pipeline again (with ``args``; or let ``running``, a `fusion run` started
    already, go on) until the enriched index has no differences; fail with them."""
    finish = running or start_run(config_file, settings, [], tmp_path, *args)
    docs: Docs = {}
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            docs = enriched_so_far(settings, config)
            if not differences(docs):
                break
            assert finish.poll() in (None, 0), finish.stderr.read() if finish.stderr else ""
            time.sleep(1)
    finally:
        kill_group(finish)
    assert not differences(docs), "\n".join(differences(docs)[:20])
    return docs


def joined_rows(cdc: Cdc, query: str) -> Docs:
    """The database's join: a ``json_build_object('k', <key>, '<part>', row_to_json(...), ...)``
    per row, as key -> {part: row}, leaving out the parts whose row is missing (null)."""
    joined = {}
    for line in cdc.sql(query).splitlines():
        row = json.loads(line)
        key = str(row.pop("k"))
        joined[key] = {part: value for part, value in row.items() if value}
    return joined


def differences(expected: Docs, docs: Docs, parts: Iterable[str]) -> list[str]:
    """Where the enriched documents' ``parts`` are not the database's join, a line each."""
    found = []
    for key in sorted(set(expected) | set(docs), key=int):
        doc = docs.get(key, {})
        have = {part: doc[part] for part in parts if doc.get(part) is not None}
        if key not in docs:
            found.append(f"{key}: no enriched document; the database has {expected[key]}")
        elif key not in expected:
            found.append(f"{key}: enriched {have}, but the database has no row of it")
        elif have != expected[key]:
            found.append(f"{key}: enriched {have}, the database {expected[key]}")
    return found


class SqlWorkload:
    """A random workload on a real PostgreSQL: each oracle's ``statement()`` draws the next
    change of its tables (in ``schema``), ``run`` applies them through psql."""

    def __init__(self, cdc: Cdc, schema: str, seed: int) -> None:
        self.cdc, self.schema, self.rng = cdc, schema, random.Random(seed)

    def statement(self) -> str:
        raise NotImplementedError

    def run(self, count: int, pause: float = 0.0) -> None:
        for _ in range(count):
            self._sql(self.statement())
            time.sleep(pause)

    def _sql(self, statement: str) -> None:
        self.cdc.sql(statement)


def pipeline_head(prefix: str, key_field: str, checkpoints: Path) -> list[str]:
    """The ``[pipeline]`` table of an oracle's pipeline file: its own name and checkpoints."""
    return [
        "[pipeline]",
        f'name = "{prefix}"',
        f'key_field = "{key_field}"',
        f'checkpoint_dir = "{checkpoints}"',
        'trigger_interval = "200 milliseconds"',
    ]


def new_schema(cdc: Cdc, tables: dict[str, str]) -> str:
    """A schema of its own with ``tables`` (name -> columns) in it: its name."""
    schema = f"s{uuid.uuid4().hex[:8]}"
    cdc.sql(f"CREATE SCHEMA {schema}")
    for table, columns in tables.items():
        cdc.sql(f"CREATE TABLE {schema}.{table} ({columns})")
    return schema


def killed_holding_a_fanout_page(
    run_in: tuple[Path, Settings, Path, PipelineConfig], during: Callable[[], None]
) -> None:
    """`fusion run` (``config_file, settings, tmp_path, config``) until it enriched something,
    then ``during`` (changes whose fan-outs it pages), until a fan-out task has searched a
    page and holds there, its slot acks and what continues not yet published; then kill -9."""
    config_file, settings, tmp_path, config = run_in
    gate = tmp_path / "fanout-gate"
    hold = f"fanout.after_page={gate}"
    run = start_run(config_file, settings, [], tmp_path, "--stop-when-idle", "600", hold=hold)
    try:
        wait_for_work(run, settings, config, 240)
        gate.touch()
        during()
        held = Path(f"{gate}.reached")
        deadline = time.monotonic() + 240
        while not held.exists():
            assert run.poll() is None and time.monotonic() < deadline, "no fan-out paged"
            time.sleep(0.2)
    finally:
        kill_group(run)


def fired_twice(settings: Settings, config: PipelineConfig) -> list[str]:
    """The keys with more than one event on the ready topic."""
    fires = [key for key, _, _ in read_raw(settings, config.ready_topic)]
    return sorted({key for key in fires if fires.count(key) > 1})
