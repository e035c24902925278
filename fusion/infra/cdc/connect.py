"""A Kafka Connect worker with Debezium's PostgreSQL connector, run from Maven Central's jars.

The worker is ``connect-runtime`` 4.3.0 (standalone: offsets in a file, no
internal topics), the Kafka version Debezium 3.6.1 is built against; on the
4.4 runtime its task dies with ``ClassNotFoundException:
org.apache.kafka.common.utils.Sanitizer``. It talks to the local broker, which
is 4.4: clients and brokers of neighbouring versions speak the same protocol.
Connectors are registered through Connect's REST API
(:func:`register`), as users do. JSON converters without schemas: a change
event's value is Debezium's envelope, its key the row's primary key as JSON
(``{"id": 7}``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fusion.infra import (
    Coordinate,
    InfraError,
    ManagedProcess,
    ServerStartError,
    java_home,
    log4j2_config,
    maven_copy,
    staging,
)
from fusion.infra.cdc.postgres import slot_name

CONNECT_VERSION = "4.3.0"
DEBEZIUM_VERSION = "3.6.1.Final"
CONNECT_WORKER = (
    Coordinate("org.apache.kafka", "connect-runtime", CONNECT_VERSION),
    Coordinate("org.apache.kafka", "connect-json", CONNECT_VERSION),
    Coordinate("org.apache.kafka", "connect-transforms", CONNECT_VERSION),
    Coordinate("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),
)
# The worker provides Kafka's and slf4j's classes; the chronicle-queue storage's POM is
# not served (and the connector does not need it).
DEBEZIUM_POSTGRES = Coordinate(
    "io.debezium",
    "debezium-connector-postgres",
    DEBEZIUM_VERSION,
    excluded=("io.debezium:debezium-storage-chronicle-queue", "org.apache.kafka:*", "org.slf4j:*"),
)
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
# Debezium's change events in Avro through a registry (format = "debezium-avro"): Apicurio's
# converter. 2.6 is the newest whose parent POM Maven Central serves; it speaks the registry's
# v2 API, which Apicurio Registry 3 still serves. Confluent's converter is not on Maven Central.
CONVERTER_VERSION = "2.6.13.Final"
AVRO_CONVERTER = Coordinate(
    "io.apicurio",
    "apicurio-registry-utils-converter",
    CONVERTER_VERSION,
    excluded=("org.apache.kafka:*", "org.slf4j:*"),
)
AVRO_CONVERTER_CLASS = "io.apicurio.registry.utils.converter.AvroConverter"


def connect_dir(artifacts: Path) -> Path:
    """Where the worker's jars (``libs``) and Debezium's plugin (``plugins``) are cached."""
    return artifacts / f"connect-{CONNECT_VERSION}-debezium-{DEBEZIUM_VERSION}"


def fetch_connect(artifacts: Path) -> Path:
    """The worker's jars, the connector plugin and the Avro converter plugin, fetched with
    Maven on first use."""
    target = connect_dir(artifacts)
    if not target.is_dir():
        with staging(target) as building:
            maven_copy(CONNECT_WORKER, building / "libs", transitive=True)
            plugin = building / "plugins" / "debezium-connector-postgres"
            maven_copy([DEBEZIUM_POSTGRES], plugin, transitive=True)
    converter = target / "plugins" / f"apicurio-converter-{CONVERTER_VERSION}"
    if not converter.is_dir():
        with staging(converter) as building:
            maven_copy([AVRO_CONVERTER], building, transitive=True)
    return target


def avro_converter(registry_url: str) -> dict[str, str]:
    """A connector's value converter settings: Avro in a registry's wire format (a zero
    byte, the schema's 4-byte content id, the body), the schema registered by the converter.

    ``registry_url``: the registry's Confluent-compatible API (``.../apis/ccompat/v7``), as
    ``[registry] url`` names it; the converter talks to the same registry's own API.
    """
    own_api = registry_url.split("/apis/")[0] + "/apis/registry/v2"
    return {
        "value.converter": AVRO_CONVERTER_CLASS,
        "value.converter.apicurio.registry.url": own_api,
        "value.converter.apicurio.registry.auto-register": "true",
        "value.converter.apicurio.registry.as-confluent": "true",
        "value.converter.apicurio.registry.use-id": "contentId",
        "value.converter.apicurio.registry.headers.enabled": "false",
    }


class LocalConnect:
    """One standalone Connect worker, its files under ``<state_dir>/connect``."""

    name = "connect"

    def __init__(
        self, jars: Path, state_dir: Path, heap: str = "512m", jvm_options: Sequence[str] = ()
    ) -> None:
        self.jars = jars
        self.dir = state_dir / "connect"
        self.heap = heap
        self.jvm_options = tuple(jvm_options)
        self.process = ManagedProcess(
            "connect",
            self.dir / "connect.pid",
            self.dir / "connect.log",
            marker="ConnectStandalone",
        )

    def start(self, port: int, bootstrap: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        properties = self.dir / "worker.properties"
        properties.write_text(_worker_properties(port, bootstrap, self.dir, self.jars))
        (self.dir / "log4j2.yaml").write_text(log4j2_config({"io.debezium": "INFO"}))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JAVA_HOME": str(java_home())}
        self.process.start(self.command(properties), env, cwd=self.dir)

    def command(self, properties: Path) -> list[str]:
        return [
            str(java_home() / "bin" / "java"),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.yaml'}",
            "-cp",
            f"{self.jars / 'libs'}/*",
            "org.apache.kafka.connect.cli.ConnectStandalone",
            str(properties),
        ]

    def healthy(self, port: int) -> bool:
        """True once the REST API lists Debezium's PostgreSQL connector among its plugins."""
        try:
            plugins = rest(port, "GET", "/connector-plugins")
        except (OSError, InfraError):
            return False
        return any(p.get("class") == POSTGRES_CONNECTOR for p in plugins)


def _worker_properties(port: int, bootstrap: str, state: Path, jars: Path) -> str:
    return f"""\
bootstrap.servers={bootstrap}
listeners=http://127.0.0.1:{port}
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter.schemas.enable=false
offset.storage.file.filename={state / "offsets"}
offset.flush.interval.ms=1000
plugin.path={jars / "plugins"}
"""


def rest(port: int, method: str, path: str, body: Any = None) -> Any:
    """One call to Connect's REST API; its JSON answer, or an error with Connect's message."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        with contextlib.suppress(ValueError):
            detail = json.loads(detail).get("message", detail)
        raise InfraError(f"Kafka Connect {method} {path}: {exc.code} {detail}") from None
    return json.loads(text) if text else None


def register(port: int, name: str, config: dict[str, str], timeout: float = 120.0) -> None:
    """Create or update connector ``name`` and wait until it and its task run.

    A connector or task that fails: :class:`ServerStartError` with the first
    lines of its trace (the worker's log has the rest).
    """
    rest(port, "PUT", f"/connectors/{name}/config", config)
    deadline = time.monotonic() + timeout
    while True:
        try:
            status = rest(port, "GET", f"/connectors/{name}/status")
        except InfraError:
            status = {}  # not created yet
        states = [status.get("connector", {}), *status.get("tasks", [])]
        failed = [s for s in states if s.get("state") == "FAILED"]
        if failed:
            trace = str(failed[0].get("trace", "")).splitlines()[:3]
            raise ServerStartError("connect", f"connector {name} failed", "\n".join(trace))
        if len(states) > 1 and all(s.get("state") == "RUNNING" for s in states):
            return
        if time.monotonic() > deadline:
            raise ServerStartError(
                "connect", f"connector {name} not running after {timeout:.0f} s", str(status)
            )
        time.sleep(0.5)


def postgres_connector(
    port: int, database: str, prefix: str, tables: list[str], user: str
) -> dict[str, str]:
    """Debezium's PostgreSQL connector for ``tables`` (``schema.table``): one topic each,
    ``<prefix>.<schema>.<table>``; a slot and a publication of its own."""
    slot = slot_name(prefix)
    return {
        "connector.class": POSTGRES_CONNECTOR,
        "database.hostname": "127.0.0.1",
        "database.port": str(port),
        "database.user": user,
        "database.password": "",
        "database.dbname": database,
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": f"{slot}_slot",
        "publication.name": f"{slot}_publication",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        "decimal.handling.mode": "string",  # NUMERIC as text, not base64-encoded bytes
        "tasks.max": "1",
    }


def unregister(port: int, name: str) -> None:
    """Forget connector ``name``: stopped, its offsets deleted (so one registered again under
    the name snapshots afresh), then deleted. Its replication slot stays, as Debezium leaves
    it (:func:`fusion.infra.cdc.postgres.LocalPostgres.drop_slot`)."""
    with contextlib.suppress(InfraError):  # not registered: nothing to forget
        rest(port, "PUT", f"/connectors/{name}/stop")
        deadline = time.monotonic() + 60
        while rest(port, "GET", f"/connectors/{name}/status")["connector"]["state"] != "STOPPED":
            if time.monotonic() > deadline:
                raise InfraError(f"Kafka Connect: connector {name} did not stop in 60 s")
            time.sleep(0.2)
        rest(port, "DELETE", f"/connectors/{name}/offsets")
        rest(port, "DELETE", f"/connectors/{name}")
