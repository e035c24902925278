"""The offline compose path, checked by reading it: its files, the mirror, compose's answers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from fusion.infra.containers.compose import _json_rows
from fusion.infra.containers.engine import DEFAULT_MIRROR, apt_mirror

ROOT = Path(__file__).resolve().parents[4]


def _offline() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.offline.yml").read_text())
    return data


def test_kafka_and_elasticsearch_run_from_the_project_image_with_their_own_checks() -> None:
    services = _offline()["services"]
    for name, script in (("kafka", "kafka.sh"), ("elasticsearch", "elasticsearch.sh")):
        assert services[name]["image"] == "fusion:latest"
        assert services[name]["command"] == [script]
        assert services[name]["healthcheck"]["test"][0] == "CMD"
        path = ROOT / "docker" / script
        assert path.is_file() and os.access(path, os.X_OK), path
        assert f"docker/{script}" in (ROOT / "Dockerfile.offline").read_text()


def test_the_project_image_builds_from_the_local_base_on_the_hosts_network() -> None:
    build = _offline()["services"]["fusion-check"]["build"]
    assert build == {"context": ".", "dockerfile": "Dockerfile.offline", "network": "host"}
    dockerfile = (ROOT / "Dockerfile.offline").read_text()
    assert "ARG BASE=fusion-base:bookworm" in dockerfile
    assert "RUN fusion infra fetch " in dockerfile  # Kafka and Elasticsearch from Maven Central


def test_the_offline_kafka_advertises_what_the_official_one_does() -> None:
    official = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["kafka"]
    advertised = official["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    offline = _offline()["services"]["kafka"]["environment"]["FUSION_KAFKA_ADVERTISED"]
    assert offline == advertised
    script = (ROOT / "docker" / "kafka.sh").read_text()
    assert "advertised.listeners=${FUSION_KAFKA_ADVERTISED:-" in script


def test_the_base_image_reads_the_hosts_own_mirror(tmp_path: Path) -> None:
    assert apt_mirror(tmp_path) == DEFAULT_MIRROR
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\n"
    )
    assert apt_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "deb [arch=amd64] http://old.example/debian bookworm main\n"
    )
    assert apt_mirror(tmp_path) == "http://old.example/debian"


def test_compose_ps_json_in_either_of_its_shapes() -> None:
    line = '{"Service": "kafka", "State": "running", "Health": "healthy", "ExitCode": 0}'
    assert _json_rows(line + "\n" + line) == _json_rows(f"[{line}, {line}]")
    assert _json_rows("") == []
