"""How to reach Kafka, Elasticsearch and a schema registry: ``[kafka]``, ``[elasticsearch]``,
``[registry]``.

Each renders the options of the clients that use it (librdkafka, Spark's
Kafka connector, elasticsearch-py), so no other module maps a setting to a
client option. Part of :class:`fusion.core.settings.Settings`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

KafkaSecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

_STRICT = ConfigDict(frozen=True, extra="forbid")

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class KafkaSettings(BaseModel):
    """How to reach Kafka, for confluent-kafka clients and Spark's connector alike."""

    model_config = _STRICT

    bootstrap: str = "127.0.0.1:9092"
    security_protocol: KafkaSecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: str | None = None
    client_options: dict[str, str] = Field(default_factory=dict)

    @field_validator("bootstrap")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        for server in value.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port...], got {value!r}")
        return value

    def as_librdkafka_options(self) -> dict[str, str]:
        """Options for confluent-kafka's Producer, Consumer and AdminClient."""
        options = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        if self.sasl_mechanism:
            options["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            options["sasl.username"] = self.sasl_username
        if self.sasl_password:
            options["sasl.password"] = self.sasl_password.get_secret_value()
        if self.ssl_ca_location:
            options["ssl.ca.location"] = self.ssl_ca_location
        return options | self.client_options

    def as_spark_options(self) -> dict[str, str]:
        """``kafka.``-prefixed options for Spark's Kafka source and sink (Java client names)."""
        options = {
            "kafka.bootstrap.servers": self.bootstrap,
            "kafka.security.protocol": self.security_protocol,
        }
        if self.sasl_mechanism:
            options["kafka.sasl.mechanism"] = self.sasl_mechanism
            password = self.sasl_password.get_secret_value() if self.sasl_password else ""
            options["kafka.sasl.jaas.config"] = (
                f"{_JAAS_MODULES[self.sasl_mechanism]} required "
                f'username="{self.sasl_username or ""}" password="{password}";'
            )
        if self.ssl_ca_location:
            # The same PEM file librdkafka reads; Java's default truststore type is JKS.
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = self.ssl_ca_location
        return options


class ElasticsearchSettings(BaseModel):
    """How to reach Elasticsearch."""

    model_config = _STRICT

    url: str = "http://127.0.0.1:9200"
    api_key: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None
    ca_certs: str | None = None
    verify_certs: bool = True
    request_timeout: float = Field(default=30.0, gt=0)

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")

    @property
    def shown_url(self) -> str:
        """The URL as Fusion prints it: a password in it (``user:secret@``) replaced by ``***``."""
        return redact_url(self.url)

    def as_client_options(self) -> dict[str, Any]:
        """Keyword arguments for ``elasticsearch.Elasticsearch``."""
        options: dict[str, Any] = {
            "hosts": [self.url],
            "request_timeout": self.request_timeout,
            "verify_certs": self.verify_certs,
        }
        if self.api_key:
            options["api_key"] = self.api_key.get_secret_value()
        elif self.username:
            password = self.password.get_secret_value() if self.password else ""
            options["basic_auth"] = (self.username, password)
        if self.ca_certs:
            options["ca_certs"] = self.ca_certs
        return options


def redact_url(url: str) -> str:
    """``url`` with the password of its user info, if any, replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at or not sep:
        return url
    user, colon, _ = userinfo.partition(":")
    shown = f"{user}:***" if colon else user
    return f"{scheme}{sep}{shown}@{host}{slash}{path}"


class RegistrySettings(BaseModel):
    """How to reach the schema registry Avro sources name their writer schemas in.

    ``url`` is its Confluent-compatible API (Confluent's Schema Registry, or
    Apicurio's ``/apis/ccompat/v7``, which ``fusion infra up --registry`` starts).
    """

    model_config = _STRICT

    url: str | None = None
    username: str | None = None
    password: SecretStr | None = None
    request_timeout: float = Field(default=10.0, gt=0)

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/") if value else value

    def as_client_config(self) -> dict[str, Any]:
        """The configuration of confluent-kafka's ``SchemaRegistryClient``."""
        config: dict[str, Any] = {"url": self.url, "timeout": self.request_timeout}
        if self.username:
            password = self.password.get_secret_value() if self.password else ""
            config["basic.auth.user.info"] = f"{self.username}:{password}"
        return config


def check_registry(formats: Iterable[tuple[str, str]], registry: RegistrySettings) -> None:
    """An Avro source needs a registry: one line naming the source and the setting.

    ``formats``: each source's name and format.
    """
    avro = [name for name, fmt in formats if fmt == "avro"]
    if avro and registry.url is None:
        raise ValueError(
            f'source {avro[0]!r} has format = "avro", and no schema registry is set: set '
            "[registry] url (or FUSION_REGISTRY_URL) to its Confluent-compatible API, e.g. "
            "http://127.0.0.1:8081/apis/ccompat/v7, which `fusion infra up --registry` starts"
        )
