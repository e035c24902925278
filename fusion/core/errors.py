"""The error hierarchy: every failure Fusion reports is a ``FusionError``.

Each subclass carries structured fields (which port, which artifact, which
file) and renders a one-line message that names the problem and the fix.
Errors may be raised inside Spark ``foreachBatch`` functions and so get
pickled across the Python/JVM boundary; ``FusionError.__reduce__`` keeps the
fields through that round trip.

Every class says which :class:`ExitCode` ``fusion`` ends with when it stops a
command; the "Exit codes" table of docs/operations.md lists them, and a unit test holds
each class to that table.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar


class ExitCode(IntEnum):
    """What ``fusion`` exits with; one value per kind of failure an operator can act on."""

    OK = 0
    #: A bug, or a failure Fusion does not know yet (``--debug`` shows the traceback).
    UNEXPECTED = 1
    #: A setting, file or command-line option is wrong.
    CONFIG = 2
    #: Kafka or Elasticsearch did not answer, or kept failing past the retry budget.
    UNAVAILABLE = 3
    #: A server refused the credentials, or its certificate is not trusted.
    CREDENTIALS = 4
    #: A streaming query (or Spark itself) stopped, or did not get there in time.
    QUERY_FAILED = 5
    #: The local runtime (``fusion infra``) could not be set up or started.
    INFRA = 6
    #: A topic or index the pipeline writes is gone, or set up so that it cannot take the
    #: pipeline's records (an index deleted while running, a topic's message size).
    DEPLOYMENT = 7
    #: Kafka refused a request for a reason no other code covers (its error code is in the line).
    KAFKA_REFUSED = 8
    #: Another process runs the same pipeline component (or took it over from this one).
    ALREADY_RUNNING = 9
    #: The pipeline ran before but its checkpoint is gone: restore it, or rebuild its state.
    CHECKPOINT_LOST = 10
    #: Stopped by Ctrl-C (128 + SIGINT, as shells count it).
    INTERRUPTED = 130


def _rebuild(cls: type[FusionError], args: tuple[Any, ...], state: dict[str, Any]) -> FusionError:
    error = Exception.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class FusionError(Exception):
    """Root of all errors raised by Fusion; each subclass sets its ``exit_code``."""

    exit_code: ClassVar[ExitCode] = ExitCode.UNEXPECTED

    def code(self) -> ExitCode:
        """The exit code this error ends a command with (its class's, unless it relays another)."""
        return self.exit_code

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take keyword fields, not the message, so the default
        # Exception pickling (cls(*args)) would call them wrongly.
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class ConfigError(FusionError):
    """A configuration file, environment override or command-line option is invalid."""

    exit_code = ExitCode.CONFIG

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {problem}")


class ServiceUnavailableError(FusionError):
    """Kafka, Elasticsearch or the schema registry did not answer at the configured address."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, service: str, address: str, detail: str, start: str = "") -> None:
        self.service = service
        self.address = address
        super().__init__(
            f"{service} at {address} is unreachable ({detail}): start it with "
            f"`fusion infra up{start}` or point the config/env at a running {service}"
        )


class CredentialsError(FusionError):
    """Kafka, Elasticsearch or the schema registry refused the configured credentials."""

    exit_code = ExitCode.CREDENTIALS

    def __init__(self, service: str, address: str, detail: str) -> None:
        self.service = service
        self.address = address
        settings = {
            "Elasticsearch": "[elasticsearch] api_key or username/password",
            "schema registry": "[registry] username/password",
        }.get(service, "[kafka] sasl_mechanism/sasl_username/sasl_password")
        super().__init__(
            f"{service} at {address} refused the credentials ({detail}): check {settings} "
            "(or their FUSION_* environment variables)"
        )


class TlsTrustError(FusionError):
    """The server's TLS certificate is not signed by the configured CA (or none was given)."""

    exit_code = ExitCode.CREDENTIALS

    def __init__(self, service: str, address: str, detail: str) -> None:
        self.service = service
        self.address = address
        setting = (
            "[elasticsearch] ca_certs (FUSION_ES_CA_CERTS)"
            if service == "Elasticsearch"
            else "[kafka] ssl_ca_location (FUSION_KAFKA_SSL_CA_LOCATION)"
        )
        super().__init__(
            f"{service} at {address} presented a certificate this CA does not trust "
            f"({detail}): set {setting} to the CA that signed the server's certificate"
        )


class WaitTimeoutError(FusionError):
    """Something Fusion waits for (a condition, a server's answer) did not happen in time."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, what: str, hint: str) -> None:
        self.what = what
        super().__init__(f"timed out waiting for {what}: {hint}")


class SparkGoneError(FusionError):
    """The JVM behind the SparkSession went away (killed, out of memory, crashed)."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"Spark's JVM stopped answering ({detail}); its log is in the Fusion logs "
            "directory. Run again: every query resumes from its checkpoint"
        )


class TopologyError(FusionError):
    """A topic or index could not be created, or set up as the pipeline needs it."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        super().__init__(f"could not set up {what}: {detail}")
