"""Throwaway TLS material and credentials for ``fusion infra up --secure``.

A CA made for this runtime signs one server certificate (``127.0.0.1`` and
``localhost``) that Kafka's SASL_SSL listener and Elasticsearch's HTTPS both
present. Passwords are random, kept in ``credentials.json`` (mode 0600) beside
the certificates, and reach the user as ``fusion.env`` (also 0600), never on
the terminal. The certificates are made with the ``openssl`` command line.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import ssl
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from fusion.infra.errors import InfraError, ToolMissingError

KAFKA_MECHANISM: Final = "SCRAM-SHA-512"
KAFKA_USER = "fusion"
KAFKA_BROKER_USER = "fusion-broker"  # the broker's own login on its SASL_SSL listener
ES_USER = "fusion"


@dataclass(frozen=True)
class Credentials:
    kafka_password: str
    kafka_broker_password: str
    es_password: str


@dataclass(frozen=True)
class SecureMaterial:
    """Where the CA, the server's key and certificate and the credentials live."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def server_key(self) -> Path:
        return self.dir / "server.key"

    @property
    def server_cert(self) -> Path:
        return self.dir / "server.pem"

    @property
    def kafka_keystore(self) -> Path:
        """Key and certificate in one PEM file, as Kafka's PEM keystore wants them."""
        return self.dir / "kafka-keystore.pem"

    @property
    def env_file(self) -> Path:
        return self.dir / "fusion.env"

    @property
    def credentials_file(self) -> Path:
        return self.dir / "credentials.json"

    def credentials(self) -> Credentials:
        return Credentials(**json.loads(self.credentials_file.read_text()))

    def save(self, credentials: Credentials) -> None:
        write_private(self.credentials_file, json.dumps(asdict(credentials), indent=2))

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


def ensure(directory: Path) -> SecureMaterial:
    """The runtime's CA, certificate and credentials, made on first use."""
    material = SecureMaterial(directory)
    if material.credentials_file.exists():
        return material
    directory.mkdir(parents=True, exist_ok=True)
    _make_certificates(material)
    material.save(
        Credentials(
            kafka_password=secrets.token_urlsafe(18),
            kafka_broker_password=secrets.token_urlsafe(18),
            es_password=secrets.token_urlsafe(18),
        )
    )
    return material


def write_env(material: SecureMaterial, bootstrap: str, es_url: str) -> Path:
    """``fusion.env``: the settings that point Fusion at the secured pair (``source`` it)."""
    creds = material.credentials()
    lines = {
        "FUSION_KAFKA_BOOTSTRAP": bootstrap,
        "FUSION_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "FUSION_KAFKA_SASL_MECHANISM": KAFKA_MECHANISM,
        "FUSION_KAFKA_SASL_USERNAME": KAFKA_USER,
        "FUSION_KAFKA_SASL_PASSWORD": creds.kafka_password,
        "FUSION_KAFKA_SSL_CA_LOCATION": str(material.ca),
        "FUSION_ES_URL": es_url,
        "FUSION_ES_CA_CERTS": str(material.ca),
        "FUSION_ES_USERNAME": ES_USER,
        "FUSION_ES_PASSWORD": creds.es_password,
    }
    write_private(material.env_file, "".join(f"export {k}='{v}'\n" for k, v in lines.items()))
    return material.env_file


def _make_certificates(material: SecureMaterial) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ToolMissingError("openssl", "install OpenSSL (e.g. `apt-get install openssl`)")
    ca_key = material.dir / "ca.key"
    csr = material.dir / "server.csr"
    san = material.dir / "san.cnf"
    san.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    days = ["-days", "365"]
    steps = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", material.ca,
         *days, "-subj", "/CN=Fusion local runtime CA"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", material.server_key, "-out", csr,
         "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", csr, "-CA", material.ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", material.server_cert, *days, "-extfile", san],
    ]  # fmt: skip
    for step in steps:
        result = subprocess.run(
            [openssl, *map(str, step)], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            detail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise InfraError(f"making the local runtime's certificates failed: {detail}")
    material.kafka_keystore.write_text(
        material.server_key.read_text() + material.server_cert.read_text()
    )
    for path in (ca_key, material.server_key, material.kafka_keystore):
        os.chmod(path, 0o600)
    for path in (csr, san):
        path.unlink()


def write_private(path: Path, text: str) -> None:
    """Write ``path`` readable and writable by its owner only (0600), from its creation on."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
