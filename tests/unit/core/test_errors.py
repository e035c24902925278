from __future__ import annotations

import importlib
import pickle
import pkgutil
import re
from pathlib import Path

import pytest

import acks
import fusion
import indexers
from fusion.cli import main as cli
from fusion.core.errors import (
    ConfigError,
    CredentialsError,
    ExitCode,
    FusionError,
    ServiceUnavailableError,
    SparkGoneError,
    TlsTrustError,
    WaitTimeoutError,
)
from fusion.infra.errors import (
    DownloadError,
    InfraError,
    PortInUseError,
    ServerStartError,
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


# --- every error class ends `fusion` with one line and its documented exit code ---------------

EXIT_CODES_DOC = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def _every_error_class() -> set[type[FusionError]]:
    """Every FusionError subclass in Fusion's packages (each module imported first)."""
    for package in (fusion, indexers, acks):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    found: set[type[FusionError]] = set()
    todo: list[type[FusionError]] = [FusionError]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.add(sub)
            todo.append(sub)
    return found


def _samples() -> list[FusionError]:
    from acks.errors import AckError
    from fusion.bench.errors import IdleError, PipelineProcessError, SustainError
    from fusion.core.errors import TopologyError
    from fusion.elastic.errors import (
        AlreadyRunningError,
        IndexAccessError,
        IndexBlockedError,
        IndexGoneError,
        IndexingError,
        LeaseLostError,
        RetryBudgetExceeded,
    )
    from fusion.infra.errors import (
        BuildStepError,
        ClassArchiveError,
        CompileError,
        ComposeError,
        EngineError,
        ServiceNotHealthyError,
    )
    from fusion.kafka.errors import (
        FencedError,
        KafkaAccessError,
        KafkaRefusedError,
        MarkersGoneError,
        MessageTooLargeError,
        PublishError,
        TransactionError,
    )
    from fusion.spark.errors import CheckpointLostError, QueryFailedError, StageError

    return [
        *ERRORS,
        CredentialsError("Kafka", "127.0.0.1:9092", "SASL authentication error"),
        TlsTrustError("Elasticsearch", "https://127.0.0.1:9200", "certificate verify failed"),
        InfraError("no log yet at /x: start the servers with `fusion infra up`"),
        CompileError("javac: error"),
        ClassArchiveError("Error: Could not create the Java Virtual Machine."),
        EngineError("no Docker engine answers and dockerd is not installed: apt-get install"),
        BuildStepError("debootstrap", "/root/.cache/fusion/logs/images/debootstrap.log"),
        ComposeError("docker compose up failed: no such image fusion:latest"),
        ServiceNotHealthyError("kafka", "unhealthy", "line 1\nline 2"),
        WaitTimeoutError("every key enriched (60 s)", "the queries run too slowly"),
        SparkGoneError("Py4JNetworkError: Answer from Java side is empty"),
        QueryFailedError("counter", "RocksDB is out of disk"),
        StageError("enricher", "503 Service Unavailable"),
        CheckpointLostError("p", "file:///c/single", ["12 records on p.ready"]),
        FencedError("fusion-p-counter-0"),
        TransactionError("fusion-p-counter-0", "coordinator not available"),
        PublishError("p.acks", 3, "timed out"),
        IndexingError("p-billing", 2, "429"),
        AlreadyRunningError("p", "counter", "pid 7 on h (fusion run, started 2026-01-01)"),
        LeaseLostError("p", "counter", "pid 7 on h (fusion run, started 2026-01-01)"),
        RetryBudgetExceeded("bulk", "ConnectionError", 30),
        TopologyError("topic p.acks", "the broker did not answer in 60 s"),
        AckError("missing field 'source'"),
        SustainError("the first step did not keep up"),
        IdleError("no record on p.incomplete within 120 s"),
        PipelineProcessError("the pipeline process exited", Path("/nonexistent.log")),
        IndexAccessError("p-billing", 403, "security_exception: unauthorized"),
        IndexGoneError("p-billing", "index_not_found_exception: no such index"),
        IndexBlockedError("p-billing", "blocked by: [FORBIDDEN/8/index write (api)];"),
        KafkaAccessError("the transaction of fusion-p-single@t-0", "TOPIC_AUTHORIZATION_FAILED"),
        MessageTooLargeError("fusion-p-single@t-0", "MSG_SIZE_TOO_LARGE"),
        KafkaRefusedError("a request", "INVALID_CONFIG: bad"),
        MarkersGoneError("p-counter", 41),
    ]


def _documented_codes() -> dict[str, int]:
    """The "Exit codes" table of docs/operations.md: each class named in a row, with its code."""
    section = EXIT_CODES_DOC.read_text().split("## Exit codes", 1)[1].split("\n#", 1)[0]
    codes: dict[str, int] = {}
    for row in re.findall(r"^\| (\d+) \|(.*)$", section, re.M):
        for name in re.findall(r"`(\w+Error|RetryBudgetExceeded)`", row[1]):
            codes[name] = int(row[0])
    return codes


def test_every_error_class_has_its_own_documented_exit_code() -> None:
    documented = _documented_codes()
    for cls in _every_error_class():
        # Set by the class or a category of it, never inherited from the root's "unexpected".
        assert cls.exit_code != ExitCode.UNEXPECTED, cls
        assert documented.get(cls.__name__) == cls.exit_code, (
            f"{cls.__name__} exits with {int(cls.exit_code)}; the exit-code table in "
            f"docs/operations.md says {documented.get(cls.__name__)}"
        )


def test_the_samples_cover_every_error_class() -> None:
    assert {type(e) for e in _samples()} == _every_error_class()


@pytest.mark.parametrize("error", _samples(), ids=lambda e: type(e).__name__)
def test_fusion_ends_with_one_line_and_the_exit_code_of_the_error(
    error: FusionError, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*_: object) -> int:
        raise error

    monkeypatch.setitem(cli.HANDLERS, "check", fail)

    code = cli.main(["check"])

    captured = capsys.readouterr()
    assert code == error.exit_code == error.code()
    lines = captured.err.splitlines()
    assert lines == [f"fusion: error: {lines[0].removeprefix('fusion: error: ')}"], captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_debug_adds_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*_: object) -> int:
        raise ConfigError("x.toml", "pipeline.name", "missing")

    monkeypatch.setitem(cli.HANDLERS, "check", fail)

    assert cli.main(["check", "--debug"]) == ExitCode.CONFIG
    assert "Traceback" in capsys.readouterr().err


def test_a_bug_is_one_line_with_exit_code_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*_: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(cli.HANDLERS, "check", fail)

    assert cli.main(["check"]) == ExitCode.UNEXPECTED
    assert capsys.readouterr().err.splitlines() == [
        "fusion: error: unexpected ZeroDivisionError: division by zero (run with --debug for "
        "the traceback)"
    ]


def test_ctrl_c_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupt(*_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.HANDLERS, "check", interrupt)

    assert cli.main(["check"]) == ExitCode.INTERRUPTED == 130
    assert capsys.readouterr().err == "fusion: interrupted\n"


def test_a_missing_config_file_and_a_bad_only_are_configuration_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--config", str(tmp_path / "nope.toml"), "check"]) == ExitCode.CONFIG
    assert "nope.toml: file not found" in capsys.readouterr().err
    pipeline_file = Path(__file__).resolve().parents[3] / "examples" / "healthcare.toml"
    assert cli.main(["--config", str(pipeline_file), "run", "--only", "nope"]) == ExitCode.CONFIG
    line = capsys.readouterr().err.strip()
    assert "unknown component 'nope'; choose one of indexers, counter" in line, line


def test_every_package_keeps_its_errors_in_its_errors_module() -> None:
    for cls in _every_error_class():
        assert cls.__module__.endswith(".errors"), f"{cls.__name__} is defined in {cls.__module__}"
