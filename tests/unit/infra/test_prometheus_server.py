"""`fusion infra up --prometheus`: the configuration it writes, and its targets' files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fusion.infra.errors import ToolMissingError
from fusion.infra.prometheus.server import (
    JOB,
    LocalPrometheus,
    Scraping,
    add_target,
    config,
    prometheus_binary,
)
from fusion.ops import ALERT_RULES
from tests.promtool import promtool


def test_the_config_scrapes_the_fusion_job_from_files_with_the_rules_and_promtool_takes_it(
    tmp_path: Path,
) -> None:
    targets = tmp_path / "targets"
    written = config(Scraping((ALERT_RULES,), interval_seconds=1), targets)
    assert written["rule_files"] == [str(ALERT_RULES)]
    assert written["global"] == {"scrape_interval": "1s", "evaluation_interval": "1s"}
    [job] = written["scrape_configs"]
    assert job["job_name"] == JOB == "fusion"  # the name the alert rules select
    assert job["file_sd_configs"][0]["files"] == [str(targets / "*.json")]
    path = tmp_path / "prometheus.yml"
    path.write_text(json.dumps(written))  # JSON is YAML
    done = promtool("check", "config", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_target_file_is_written_whole_and_replaced(tmp_path: Path) -> None:
    path = add_target(tmp_path, "orders", ["127.0.0.1:9465"], pipeline="orders")
    assert json.loads(path.read_text()) == [
        {"targets": ["127.0.0.1:9465"], "labels": {"pipeline": "orders"}}
    ]
    add_target(tmp_path, "orders", ["127.0.0.1:9466"])
    assert json.loads(path.read_text())[0]["targets"] == ["127.0.0.1:9466"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orders.json"]  # no staging left


def test_without_the_package_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError, match=r"apt-get install prometheus"):
        prometheus_binary()
    # Stopping one recorded earlier needs no binary.
    assert LocalPrometheus(tmp_path).process.pid() is None
