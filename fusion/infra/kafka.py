"""A single-node Apache Kafka broker in KRaft mode, run from the cached broker jars."""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from fusion.core import KafkaSettings
from fusion.infra.errors import ServerStartError
from fusion.infra.java import java_home
from fusion.infra.process import ManagedProcess
from fusion.infra.secure import (
    KAFKA_BROKER_USER,
    KAFKA_MECHANISM,
    KAFKA_USER,
    SecureMaterial,
    write_private,
)

_QUIET = logging.getLogger("fusion.infra.kafka.client")
_QUIET.setLevel(logging.CRITICAL)


def log4j2_config(loggers: dict[str, str] | None = None) -> str:
    """A log4j2 config for a Kafka server's JVM: warnings, ``kafka`` at INFO, plus ``loggers``."""
    named = {"kafka": "INFO", "org.apache.kafka": "WARN", **(loggers or {})}
    entries = "".join(
        f"      - name: {name}\n        level: {level}\n" for name, level in named.items()
    )
    return f"""\
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Logger:
{entries}    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
"""


@dataclass(frozen=True)
class KafkaPorts:
    broker: int
    controller: int


class LocalKafka:
    """One combined broker/controller, data under ``<state_dir>/kafka``."""

    name = "kafka"

    def __init__(
        self,
        libs: Path,
        state_dir: Path,
        heap: str,
        secure: SecureMaterial | None = None,
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.libs = libs
        self.dir = state_dir / "kafka"
        self.heap = heap
        self.jvm_options = tuple(jvm_options)
        self.secure = secure  # a SASL_SSL listener (SCRAM) instead of PLAINTEXT
        self.process = ManagedProcess(
            "kafka", self.dir / "kafka.pid", self.dir / "kafka.log", marker="kafka.Kafka"
        )

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def start(self, ports: KafkaPorts) -> None:
        """Write the config, format storage on first start, launch the broker."""
        self.dir.mkdir(parents=True, exist_ok=True)
        properties = self.dir / "server.properties"
        # It holds the broker's own SCRAM password when secured: readable by its owner only.
        write_private(properties, _server_properties(ports, self.data_dir, self.secure))
        (self.dir / "log4j2.yaml").write_text(log4j2_config())
        if not (self.data_dir / "meta.properties").exists():
            self._format(properties)
        self.process.start(self._java("kafka.Kafka", str(properties)), env=_env(), cwd=self.dir)

    def _format(self, properties: Path) -> None:
        cluster_id = _cluster_id(uuid.uuid4())
        while cluster_id.startswith("-"):  # read as an option by the storage tool, as Kafka's
            cluster_id = _cluster_id(uuid.uuid4())  # own Uuid.randomUuid() knows
        result = subprocess.run(
            self._java(
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id,
                "-c",
                str(properties),
                *_scram_users(self.secure),
            ),
            capture_output=True,
            text=True,
            env=_env(),
            check=False,
        )
        if result.returncode != 0:
            raise ServerStartError("kafka", "formatting the KRaft storage failed", result.stderr)

    def _java(self, main: str, *args: str) -> list[str]:
        return [
            str(java_home() / "bin" / "java"),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.yaml'}",
            "-cp",
            f"{self.libs}/*",
            main,
            *args,
        ]

    def healthy(self, bootstrap: str) -> bool:
        """True once the broker answers a metadata request (as Fusion's user, when secured)."""
        from confluent_kafka.admin import AdminClient

        options = client_settings(bootstrap, self.secure).as_librdkafka_options()
        admin = AdminClient(dict(options), logger=_QUIET)
        try:
            metadata = admin.list_topics(timeout=2)
        except Exception:
            return False
        return bool(metadata.brokers)


def client_settings(bootstrap: str, secure: SecureMaterial | None) -> KafkaSettings:
    """The settings Fusion's clients use for this broker (as Fusion's user when secured)."""
    if secure is None:
        return KafkaSettings(bootstrap=bootstrap)
    return KafkaSettings(
        bootstrap=bootstrap,
        security_protocol="SASL_SSL",
        sasl_mechanism=KAFKA_MECHANISM,
        sasl_username=KAFKA_USER,
        sasl_password=SecretStr(secure.credentials().kafka_password),
        ssl_ca_location=str(secure.ca),
    )


def _scram_users(secure: SecureMaterial | None) -> list[str]:
    """KRaft stores SCRAM credentials in its metadata: they are added when storage is formatted.

    As salted passwords (RFC 5802's Hi, what the broker derives from a password
    itself), never the passwords: a command line is readable by any user of
    the machine in ``/proc/<pid>/cmdline``.
    """
    if secure is None:
        return []
    creds = secure.credentials()
    users = ((KAFKA_USER, creds.kafka_password), (KAFKA_BROKER_USER, creds.kafka_broker_password))
    return [
        arg for name, password in users for arg in ("--add-scram", scram_salted(name, password))
    ]


SCRAM_ITERATIONS = 4096  # Kafka's default for --add-scram


def scram_salted(name: str, password: str, salt: bytes | None = None) -> str:
    """``--add-scram``'s value for ``name``: its salt and salted password, base64, no password."""
    salt = salt or secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, SCRAM_ITERATIONS)
    encoded = {
        "salt": base64.b64encode(salt).decode(),
        "saltedpassword": base64.b64encode(salted).decode(),
    }
    return (
        f'{KAFKA_MECHANISM}=[name={name},salt="{encoded["salt"]}",'
        f'saltedpassword="{encoded["saltedpassword"]}",iterations={SCRAM_ITERATIONS}]'
    )


def _listeners(ports: KafkaPorts, secure: SecureMaterial | None) -> str:
    controller = f"CONTROLLER://127.0.0.1:{ports.controller}"
    if secure is None:
        return f"""\
listeners=PLAINTEXT://127.0.0.1:{ports.broker},{controller}
advertised.listeners=PLAINTEXT://127.0.0.1:{ports.broker}
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
"""
    # One client listener, SASL_SSL with SCRAM; the broker talks to itself through it as
    # its own user. The controller listener stays on loopback, as in the plain runtime.
    password = secure.credentials().kafka_broker_password
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{KAFKA_BROKER_USER}" password="{password}";'
    )
    return f"""\
listeners=SASL_SSL://127.0.0.1:{ports.broker},{controller}
advertised.listeners=SASL_SSL://127.0.0.1:{ports.broker}
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms={KAFKA_MECHANISM}
sasl.mechanism.inter.broker.protocol={KAFKA_MECHANISM}
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={jaas}
ssl.keystore.type=PEM
ssl.keystore.location={secure.kafka_keystore}
ssl.truststore.type=PEM
ssl.truststore.location={secure.ca}
ssl.endpoint.identification.algorithm=https
"""


def _server_properties(
    ports: KafkaPorts, data_dir: Path, secure: SecureMaterial | None = None
) -> str:
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{ports.controller}
controller.listener.names=CONTROLLER
{_listeners(ports, secure)}log.dirs={data_dir}
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
"""


def _cluster_id(value: uuid.UUID) -> str:
    """Kafka's cluster id format: the UUID's 16 bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JAVA_HOME": str(java_home())}
