"""retry_kafka: again while Kafka says "not now", Kafka's own error when it says "no"."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from fusion.kafka.retry import classify, retry_kafka


def _failing(*codes: int) -> tuple[list[int], object]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(codes):
            raise KafkaException(KafkaError(codes[len(calls) - 1], "nope"))
        return "done"

    return calls, call


def test_not_now_is_retried_and_said() -> None:
    calls, call = _failing(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._TRANSPORT)
    said: list[str] = []

    assert retry_kafka(call, budget=30, what="a marker", on_retry=said.append) == "done"  # type: ignore[arg-type]
    assert len(calls) == 3 and len(said) == 2
    assert said[0].startswith("Kafka unavailable, retrying a marker: ")


def test_a_refusal_is_raised_at_once() -> None:
    calls, call = _failing(KafkaError.TOPIC_AUTHORIZATION_FAILED)

    with pytest.raises(KafkaException) as raised:
        retry_kafka(call, budget=30, what="a marker")  # type: ignore[arg-type]
    assert len(calls) == 1 and raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_when_the_budget_runs_out_kafkas_own_error_is_raised() -> None:
    calls, call = _failing(*[KafkaError._ALL_BROKERS_DOWN] * 100)

    with pytest.raises(KafkaException) as raised:
        retry_kafka(call, budget=1, what="a marker")  # type: ignore[arg-type]
    assert 2 <= len(calls) <= 4 and raised.value.args[0].code() == KafkaError._ALL_BROKERS_DOWN


@pytest.mark.parametrize(
    ("code", "kind", "exit_code"),
    [
        (KafkaError._FENCED, "FencedError", 5),
        (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "KafkaAccessError", 4),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, "KafkaAccessError", 4),
        (KafkaError.SASL_AUTHENTICATION_FAILED, "CredentialsError", 4),
        (KafkaError.MSG_SIZE_TOO_LARGE, "MessageTooLargeError", 7),
        (KafkaError._TRANSPORT, "ServiceUnavailableError", 3),
        (KafkaError.INVALID_CONFIG, "KafkaRefusedError", 8),
    ],
)
def test_kafka_errors_are_told_apart_by_their_code(code: int, kind: str, exit_code: int) -> None:
    # Fatal or not, a fenced producer and a missing ACL are different stories.
    error = classify(KafkaError(code, "detail", fatal=True), "fusion-p-single@t-0", "b:9092")

    assert type(error).__name__ == kind and error.code() == exit_code


def test_a_leader_epoch_older_than_the_brokers_is_not_now() -> None:
    # A broker paused and back: list_offsets answered FENCED_LEADER_EPOCH, and a
    # query died of it (make test-containers). Fresh metadata makes the call pass.
    calls, call = _failing(KafkaError.FENCED_LEADER_EPOCH, KafkaError.NOT_LEADER_FOR_PARTITION)

    assert retry_kafka(call, budget=30, what="the earliest offsets") == "done"  # type: ignore[arg-type]
    assert len(calls) == 3
