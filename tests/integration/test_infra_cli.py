"""`fusion infra up | status | down` against the real launcher, in a private state directory."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fusion.cli.main import main
from fusion.core.errors import ExitCode
from fusion.core.machine.ports import free_port
from fusion.core.settings import Settings
from fusion.infra.artifacts import ELASTICSEARCH_VERSION
from fusion.infra.process import group_members
from fusion.infra.runtime import LocalRuntime


@pytest.fixture
def runtime_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state_dir = tmp_path / "state"
    monkeypatch.setenv("FUSION_RUNTIME_STATE_DIR", str(state_dir))
    monkeypatch.setenv("FUSION_RUNTIME_KAFKA_PORT", str(free_port()))
    monkeypatch.setenv("FUSION_RUNTIME_ES_PORT", str(free_port()))
    return state_dir


def _pids(state_dir: Path) -> list[int]:
    return [int(p.read_text()) for p in state_dir.glob("*/*.pid")]


def test_up_status_down_keeps_data_and_purge_deletes_it(
    runtime_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.load()
    es_url = f"http://127.0.0.1:{settings.runtime.es_port}"
    spark_port, prometheus_port = free_port(), free_port()
    try:
        up = ["infra", "up", "--spark-workers", "2", "--spark-port", str(spark_port)]
        assert main([*up, "--prometheus", "--prometheus-port", str(prometheus_port)]) == 0
        said = capsys.readouterr().out
        assert f"FUSION_SPARK_MASTER=spark://127.0.0.1:{spark_port}" in said
        assert f"Prometheus           http://127.0.0.1:{prometheus_port} (alerts: " in said
        assert main(["infra", "status", "--json"]) == 0
        statuses = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
        assert {name: s["healthy"] for name, s in statuses.items()} == {
            "kafka": True,
            "elasticsearch": True,
            "spark": True,
            "prometheus": True,
        }
        # Fusion's alert rules loaded, the job the rules select scraped.
        rules = _get(f"http://127.0.0.1:{prometheus_port}/api/v1/rules")["data"]["groups"]
        assert "FusionQueryStopped" in {r["name"] for group in rules for r in group["rules"]}
        assert "2 of 2 worker(s) alive" in statuses["spark"]["version"]
        # The acceptance's own check: cluster health answers, from the default version.
        with urllib.request.urlopen(f"{es_url}/_cluster/health") as response:
            assert json.loads(response.read())["status"] in ("yellow", "green")
        assert statuses["elasticsearch"]["version"] == ELASTICSEARCH_VERSION
        _put(f"{es_url}/keep/_doc/1?refresh=wait_for", {"kept": True})
        pids = _pids(runtime_env)
        assert len(pids) == 6  # Kafka, Elasticsearch, the Spark master, two workers, Prometheus

        assert main(["infra", "down"]) == 0
        assert all(group_members(pid) == [] for pid in pids)
        assert main(["infra", "status"]) == ExitCode.UNAVAILABLE

        assert main(["infra", "up"]) == 0
        with urllib.request.urlopen(f"{es_url}/keep/_doc/1") as response:
            assert json.loads(response.read())["_source"] == {"kept": True}
        assert "Prometheus" not in capsys.readouterr().out  # opt-in, as Spark is
    finally:
        assert main(["infra", "down", "--purge"]) == 0
    assert not runtime_env.exists()


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        found: dict[str, Any] = json.loads(response.read())
    return found


def test_port_in_use_is_one_clear_line(
    runtime_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.load()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", settings.runtime.kafka_port))
        taken.listen()

        assert main(["infra", "up"]) == ExitCode.INFRA

    error = capsys.readouterr().err
    assert f"port {settings.runtime.kafka_port} for kafka is already in use" in error
    assert "--kafka-port" in error
    assert LocalRuntime.from_settings(settings.runtime).status()[0].running is False


def _put(url: str, body: dict[str, object]) -> None:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        assert response.status in (200, 201)
