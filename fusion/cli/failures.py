"""How a failure ends a ``fusion`` command: one line on stderr and the exit code of its kind.

Fusion's own errors (:mod:`fusion.core.errors`) already name the problem and the
fix. The clients' exceptions that reach a command without passing through
Fusion's checks (a broker that stops answering half-way, Spark's JVM dying)
are told here in the same words, so no operator meets a library's traceback.
Anything else is a bug: one line that says so, the traceback with ``--debug``.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from fusion.core import (
    CredentialsError,
    ExitCode,
    FusionError,
    ServiceUnavailableError,
    Settings,
    SparkGoneError,
    WaitTimeoutError,
)
from fusion.infra import InfraError
from fusion.kafka import classify


def report(exc: BaseException, settings: Settings | None, debug: bool) -> tuple[int, str]:
    """The exit code and the one line that ``exc`` ends a command with."""
    error = as_fusion_error(exc, settings or Settings())
    if error is None:
        hint = "" if debug else " (run with --debug for the traceback)"
        return ExitCode.UNEXPECTED, one_line(f"unexpected {type(exc).__name__}: {exc}{hint}")
    return error.code(), one_line(str(error))


def one_line(message: str) -> str:
    """``message`` on one line: a multi-line detail (a log tail, a server's answer) folded in."""
    return " | ".join(part.strip() for part in message.splitlines() if part.strip())


def as_fusion_error(exc: BaseException, settings: Settings) -> FusionError | None:
    """``exc`` itself if it is Fusion's, its translation if it is a known client's, else None."""
    if isinstance(exc, FusionError):
        return exc
    name = type(exc).__name__
    module = type(exc).__module__
    if module.startswith("confluent_kafka") or name == "KafkaException":
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError):
            return classify(error, "a request", settings.kafka.bootstrap)
        return ServiceUnavailableError("Kafka", settings.kafka.bootstrap, _detail(exc))
    if module.startswith(("elasticsearch", "elastic_transport")):
        status = getattr(getattr(exc, "meta", None), "status", None)
        url = settings.elasticsearch.shown_url
        if status in (401, 403):
            return CredentialsError("Elasticsearch", url, f"HTTP {status}")
        if status is None or status >= 500:
            return ServiceUnavailableError("Elasticsearch", url, _detail(exc))
        return None  # a 4xx other than auth: a request Fusion got wrong
    if module.startswith("py4j"):
        return SparkGoneError(f"{name}: {_detail(exc)}")
    if "JAVA_GATEWAY_EXITED" in str(exc):
        return InfraError(
            "Spark's JVM did not start (the Java gateway exited): check that `java -version` "
            "shows Java 17 or newer, and read Spark's log in the Fusion logs directory"
        )
    if isinstance(exc, TimeoutError):
        return WaitTimeoutError(
            _detail(exc) or "an answer",
            "check that Kafka and Elasticsearch answer (`fusion check`) and run again",
        )
    return None


def _detail(exc: BaseException) -> str:
    # Elasticsearch's transport errors keep their cause in .message; str() is generic.
    text = str(getattr(exc, "message", None) or exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
