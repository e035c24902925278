"""A real Prometheus scrapes a real `fusion run` process: the shipped alerts fire, the
dashboard's every panel answers, and promtool finds nothing to fix in the scrape.

The pipeline runs as an operator runs it, a process of its own with ``[metrics]
port`` set; the session's Prometheus (conftest.py) discovers it from a target
file, scrapes it and evaluates fusion/ops/alerts.yml every second. The tests
run in file order: the last one kills the process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.machine.ports import free_port
from fusion.core.settings import Settings
from fusion.infra.prometheus import add_target
from fusion.kafka import topics as kafka_topics
from tests.integration.conftest import Prometheus
from tests.integration.pipelines import drop, write_config_file
from tests.promtool import promtool

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KEYS = 40
T = TypeVar("T")


@dataclass(frozen=True)
class Watched:
    """The pipeline's process, its config, and the instance label Prometheus gives it."""

    process: subprocess.Popen[str]
    config: PipelineConfig
    instance: str
    prometheus: Prometheus
    keys: int  # that fire: the dataset's complete ones

    def alive(self) -> None:
        if self.process.poll() is not None:
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"fusion run ended ({self.process.returncode}): {stderr[-2000:]}")


@pytest.fixture(scope="module")
def watched(
    settings: Settings, prometheus: Prometheus, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Watched]:
    port = free_port()
    path = write_config_file(settings, tmp_path_factory.mktemp("watched") / "p.toml", ["a", "b"])
    path.write_text(path.read_text() + f"[metrics]\nport = {port}\n")
    config = PipelineConfig.load(path, env={})
    kafka_topics.ensure_topics(config)
    env = dict(
        os.environ,
        FUSION_HOME=str(settings.runtime.home),
        FUSION_SPARK_MASTER="local[2,4]",
        FUSION_SPARK_SHUFFLE_PARTITIONS="2",
    )
    process = subprocess.Popen(
        [BIN / "fusion", "run", "--config", str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the JVM goes down with it
    )
    target = add_target(prometheus.targets, config.name, [f"127.0.0.1:{port}"])
    data = build_dataset(config, GenOptions(keys=KEYS, seed=5))
    malformed = (config.topic_of(config.source("a")), "bad", b"{not json")
    produce(config, [*data.records, malformed])
    try:
        yield Watched(process, config, f"127.0.0.1:{port}", prometheus, len(data.expected))
    finally:
        target.unlink(missing_ok=True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        drop(config)


def test_a_dead_letter_fires_the_dead_letter_alert(watched: Watched) -> None:
    # The pipeline runs, and the alert of a stopped query stays silent meanwhile.
    up = f'fusion_query_up{{instance="{watched.instance}"}}'
    _wait(watched, lambda: _values(watched, up) == [1.0] or None, "fusion_query_up 1")
    alert = _wait(watched, lambda: _firing(watched, "FusionDeadLetters"), "FusionDeadLetters")
    assert [a["labels"]["query"] for a in alert] == ["indexer-a"]
    assert alert[0]["labels"]["severity"] == "warning"
    assert "indexer-a at " + watched.instance in alert[0]["annotations"]["summary"]
    assert not _firing(watched, "FusionQueryStopped")


def test_every_dashboard_panel_answers_while_the_pipeline_runs(watched: Watched) -> None:
    fired = f'fusion_keys_fired_total{{instance="{watched.instance}"}}'
    keys = float(watched.keys)
    _wait(watched, lambda: _values(watched, fired) == [keys] or None, f"{keys:g} keys fired")
    dashboard = json.loads((ROOT / "examples" / "grafana-dashboard.json").read_text())
    panels = {
        f"{panel['title']}: {target['expr']}": target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    }
    assert len(panels) >= 8

    def silent() -> list[str]:
        return [name for name, expr in panels.items() if not _query(watched, expr)]

    # Rates need two scrapes in their window: wait for them, then every panel must answer.
    with contextlib.suppress(AssertionError):
        _wait(watched, lambda: not silent() or None, "every panel answering", timeout=30)
    assert not silent(), "panels that return nothing while the pipeline runs"


def test_promtool_finds_nothing_to_fix_in_a_real_scrape(watched: Watched) -> None:
    url = f"http://{watched.instance}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    assert "fusion_keys_fired_total" in text and "process_start_time_seconds" in text
    done = promtool("check", "metrics", stdin=text)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), (
        done.stdout + done.stderr
    )


def test_a_killed_pipeline_fires_the_stopped_query_alert(watched: Watched) -> None:
    watched.alive()
    os.killpg(watched.process.pid, signal.SIGKILL)
    watched.process.wait(timeout=30)
    # `for: 1m`: a restart quicker than that pages nobody.
    alert = _wait(
        watched, lambda: _firing(watched, "FusionQueryStopped"), "FusionQueryStopped", 150, False
    )
    assert alert[0]["labels"]["severity"] == "critical"
    assert alert[0]["annotations"]["summary"] == f"Fusion is not running at {watched.instance}"


def _api(watched: Watched, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{watched.prometheus.url}{path}{query}", timeout=10) as answer:
        body = json.loads(answer.read())
    assert body["status"] == "success", body
    return body["data"]


def _query(watched: Watched, expr: str) -> list[dict[str, Any]]:
    """The instant vector ``expr`` returns (an error fails the test)."""
    data = _api(watched, "/api/v1/query", query=expr)
    assert data["resultType"] == "vector", (expr, data)
    return list(data["result"])


def _values(watched: Watched, expr: str) -> list[float]:
    return [float(sample["value"][1]) for sample in _query(watched, expr)]


def _firing(watched: Watched, alert: str) -> list[dict[str, Any]]:
    """The firing alerts named ``alert`` on this test's pipeline."""
    return [
        found
        for found in _api(watched, "/api/v1/alerts")["alerts"]
        if found["labels"].get("alertname") == alert
        and found["labels"].get("instance") == watched.instance
        and found["state"] == "firing"
    ]


def _wait(
    watched: Watched,
    found: Callable[[], T | None],
    what: str,
    timeout: float = 240.0,
    alive: bool = True,
) -> T:
    """``found()``'s first truthy answer; fails once ``timeout`` s pass or the run ends."""
    deadline = time.monotonic() + timeout
    while True:
        if alive:
            watched.alive()
        if answer := found():
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f} s")
        time.sleep(0.5)
