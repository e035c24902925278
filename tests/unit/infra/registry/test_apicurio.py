"""The schema registry's artifact and runtime bookkeeping (no server: tests/integration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.infra.registry.apicurio import (
    APICURIO,
    CCOMPAT,
    recorded_registry,
    registry_dir,
    registry_url,
    runner_jar,
)


def test_the_registry_is_the_all_classifier_tar_gz_of_apicurio_3_0_9() -> None:
    """3.0.9 runs on Java 17 (3.1 needs 21); Maven Central has it whole under 'all'."""
    xml = APICURIO.pom_dependency(transitive=False)

    assert "<artifactId>apicurio-registry-app</artifactId><version>3.0.9</version>" in xml
    assert "<type>tar.gz</type><classifier>all</classifier>" in xml
    assert str(APICURIO) == "io.apicurio:apicurio-registry-app:3.0.9:tar.gz:all"


def test_clients_point_at_the_confluent_compatible_api() -> None:
    assert registry_url(8081) == "http://127.0.0.1:8081/apis/ccompat/v7"
    assert CCOMPAT == "/apis/ccompat/v7"


def test_the_runner_jar_is_found_wherever_the_archive_put_it(tmp_path: Path) -> None:
    app = tmp_path / "dist" / "apicurio-registry-app-3.0.9"
    (app / "lib").mkdir(parents=True)
    (app / "apicurio-registry-app-3.0.9-runner.jar").write_bytes(b"PK")

    assert runner_jar(tmp_path).name == "apicurio-registry-app-3.0.9-runner.jar"
    with pytest.raises(FileNotFoundError, match="delete it to fetch it again"):
        runner_jar(tmp_path / "dist" / "apicurio-registry-app-3.0.9" / "lib")


def test_a_runtime_without_up_registry_has_no_registry(tmp_path: Path) -> None:
    assert recorded_registry(tmp_path, tmp_path / "state", {"kafka": {"port": 9092}}) == []
    # Recorded, but its files are gone (the cache was cleared): nothing to stop or show.
    assert recorded_registry(tmp_path, tmp_path / "state", {"registry": {"port": 8081}}) == []
    app = registry_dir(tmp_path) / "dist"
    app.mkdir(parents=True)
    (app / "apicurio-registry-app-3.0.9-runner.jar").write_bytes(b"PK")
    (found,) = recorded_registry(tmp_path, tmp_path / "state", {"registry": {"port": 8081}})
    assert found.name == "registry" and found.process.marker == "apicurio-registry-app"


def test_the_endpoints_name_the_registry_only_when_up_registry_started_one() -> None:
    from fusion.infra.registry.apicurio import url_of

    assert url_of({"kafka": {"port": 9092}}) is None
    assert url_of({"registry": {"port": 18081}}) == "http://127.0.0.1:18081/apis/ccompat/v7"
