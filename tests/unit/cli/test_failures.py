"""Clients' exceptions that reach a command are told like Fusion's own: one line, a code."""

from __future__ import annotations

import concurrent.futures

import pytest
from confluent_kafka import KafkaError, KafkaException
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import AuthenticationException, BadRequestError
from elasticsearch import ConnectionError as ESConnectionError
from py4j.protocol import Py4JNetworkError

from fusion.cli.failures import report
from fusion.core.errors import ExitCode
from fusion.core.settings import Settings

SETTINGS = Settings.load(env={"FUSION_KAFKA_BOOTSTRAP": "broker:9092"})


def _meta(status: int) -> ApiResponseMeta:
    node = NodeConfig("http", "es", 9200)
    return ApiResponseMeta(status, "1.1", HttpHeaders(), 0.01, node)


@pytest.mark.parametrize(
    ("exc", "code", "words"),
    [
        (
            KafkaException(KafkaError(KafkaError._TRANSPORT, "all brokers down")),
            ExitCode.UNAVAILABLE,
            ["Kafka at broker:9092 is unreachable", "all brokers down", "fusion infra up"],
        ),
        (
            ESConnectionError("connection refused"),
            ExitCode.UNAVAILABLE,
            ["Elasticsearch at http://127.0.0.1:9200 is unreachable", "connection refused"],
        ),
        (
            AuthenticationException("unauthorized", _meta(401), {}),
            ExitCode.CREDENTIALS,
            ["refused the credentials (HTTP 401)", "[elasticsearch] api_key"],
        ),
        (
            Py4JNetworkError("Answer from Java side is empty"),
            ExitCode.QUERY_FAILED,
            ["Spark's JVM stopped answering", "resumes from its checkpoint"],
        ),
        (
            concurrent.futures.TimeoutError(),
            ExitCode.QUERY_FAILED,
            ["timed out waiting for", "fusion check"],
        ),
        (
            RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited"),
            ExitCode.INFRA,
            ["Spark's JVM did not start", "java -version"],
        ),
    ],
    ids=["kafka", "es-connection", "es-401", "py4j", "timeout", "no-jvm"],
)
def test_a_client_exception_is_told_as_one_line_with_its_exit_code(
    exc: Exception, code: int, words: list[str]
) -> None:
    got_code, line = report(exc, SETTINGS, debug=False)

    assert got_code == code
    assert "\n" not in line
    for word in words:
        assert word in line, line


def test_an_elasticsearch_request_error_is_a_bug_not_an_outage() -> None:
    exc = BadRequestError("mapper_parsing_exception", _meta(400), {})

    code, line = report(exc, SETTINGS, debug=False)

    assert code == ExitCode.UNEXPECTED
    assert line.startswith("unexpected BadRequestError") and "--debug" in line


def test_a_multi_line_message_is_folded_into_one() -> None:
    from fusion.infra.errors import ServerStartError

    error = ServerStartError("kafka", "its process exited", "line 1\nline 2\n")

    code, line = report(error, None, debug=False)

    assert code == ExitCode.INFRA
    assert line == "kafka did not come up: its process exited; last log lines: | line 1 | line 2"
