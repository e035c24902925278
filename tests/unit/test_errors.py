from __future__ import annotations

import pickle

import pytest

from fusion.errors import (
    ConfigError,
    DownloadError,
    FusionError,
    PortInUseError,
    ServerStartError,
    ServiceUnavailableError,
    ToolMissingError,
)

ERRORS = [
    ConfigError("pipeline.toml", "sources[1].name", "duplicate source name"),
    PortInUseError("kafka", 9092, "--kafka-port"),
    DownloadError("org.x:y:1:jar", "not found"),
    ServerStartError("elasticsearch", "its process exited", "line 1\nline 2"),
    ServiceUnavailableError("Kafka", "127.0.0.1:9092", "timed out"),
    ToolMissingError("mvn", "install Maven"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_errors_survive_pickling_with_their_fields(error: FusionError) -> None:
    copy = pickle.loads(pickle.dumps(error))

    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.__dict__ == error.__dict__
    assert isinstance(copy, FusionError)


def test_port_error_names_the_problem_and_the_fix() -> None:
    message = str(PortInUseError("elasticsearch", 9200, "--es-port"))

    assert "port 9200" in message and "--es-port" in message
