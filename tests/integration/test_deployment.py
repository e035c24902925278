"""One application per component, as in production: `fusion status` still sees all of them.

The indexers run under ``spark-submit $(fusion spark-submit-args)``, the
counter and the enricher as their own `fusion run --only ...`: three Spark
applications, three drivers. Twice, each time on new data, to check that
counts add up across restarts. `fusion status` (another process, no Spark)
then reports every component's counts and lag from what their drivers
committed to Kafka.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import lag
from fusion.kafka import topics as kafka_topics
from fusion.topology import ENRICHER, reads, topology_of
from tests.integration.pipelines import doc_count, drop, read_topic, write_config_file

BIN = Path(sys.executable).parent
SOURCES = ["billing", "insurance"]
STAGES = ["indexers", "counter", "enricher"]


class Components:
    """The indexers (spark-submit), the counter and the enricher, each its own application."""

    def __init__(self, config_file: Path, settings: Settings) -> None:
        self.env = dict(
            os.environ,
            FUSION_HOME=str(settings.runtime.home),
            PATH=f"{BIN}:{os.environ.get('PATH', '')}",  # spark-submit finds pyspark through PATH
        )
        submit = subprocess.run(
            [BIN / "fusion", "spark-submit-args"],
            env=self.env, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        assert {"--jars", "--py-files"} <= set(submit) and submit[-1].endswith("submit.py")
        run = [BIN / "fusion", "run", "--config", str(config_file), "--only"]
        self.commands: dict[str, list[Any]] = {
            "indexers": [BIN / "spark-submit", "--master", "local[2,4]", *submit,
                         "--config", str(config_file), "--only", "indexers"],
            "counter": [*run, "counter"],
            "enricher": [*run, "enricher"],
        }  # fmt: skip
        self.running: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str) -> None:
        self.running[name] = subprocess.Popen(
            self.commands[name],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: a signal reaches its JVM too
        )

    def check(self) -> None:
        for name, process in self.running.items():
            if process.poll() is not None:
                stderr = process.stderr.read() if process.stderr else ""
                raise AssertionError(f"{name} exited: {stderr[-3000:]}")

    def stop(self, *names: str) -> None:
        """Ctrl-C: each stops its queries and exits."""
        stopping = [self.running.pop(name) for name in names or list(self.running)]
        for process in stopping:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
        for process in stopping:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def _status(config_file: Path, settings: Settings) -> dict[str, Any]:
    result = subprocess.run(
        [BIN / "fusion", "status", "--json", "--no-state", "--config", str(config_file)],
        env=dict(os.environ, FUSION_HOME=str(settings.runtime.home)),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    status: dict[str, Any] = json.loads(result.stdout[result.stdout.index("{") :])
    return status


def test_status_counts_every_component_across_applications_and_restarts(
    settings: Settings, tmp_path: Path
) -> None:
    # One query per stage (not the default single query), each stage its own application.
    config_file = write_config_file(
        settings, tmp_path / "p.toml", SOURCES, layout="stages", enrich_in="enricher"
    )
    config = PipelineConfig.load(config_file, env={})
    data = build_dataset(config, GenOptions(keys=40, seed=17, duplicate_rate=0, missing_rate=0.1))
    keys = sorted({key for _, key, _ in data.records})
    waves = [keys[: len(keys) // 2], keys[len(keys) // 2 :]]
    kafka_topics.ensure_topics(config)
    es = es_client.connect(config.elasticsearch)
    apps = Components(config_file, settings)

    def wait_for(condition: Any, what: str) -> None:
        deadline = time.monotonic() + 300
        while not condition():
            apps.check()
            assert time.monotonic() < deadline, what
            time.sleep(1)

    def enriched(want: int) -> Any:
        def check() -> bool:
            es.indices.refresh(index=config.enriched_index, ignore_unavailable=True)
            count = doc_count(es, config.enriched_index)
            return count == want and lag.behind(config, reads(topology_of(config).select())) == 0

        return check

    first_keys = set(waves[0]) & set(data.expected)
    try:
        produce(config, [r for r in data.records if r[1] in waves[0]])
        for name in ("indexers", "counter", "enricher"):
            apps.start(name)
        wait_for(enriched(len(first_keys)), "the first wave")
        # The enricher goes away; the second wave is indexed and counted meanwhile...
        apps.stop("enricher")
        produce(config, [r for r in data.records if r[1] in waves[1]])
        counting = reads(topology_of(config).select())
        del counting[ENRICHER]
        wait_for(lambda: lag.behind(config, counting) == 0, "the second wave counted")
        # ...and a new enricher application picks it up: its counts add to the old one's.
        apps.start("enricher")
        wait_for(enriched(len(data.expected)), "the second wave enriched")
        apps.stop()

        report = _status(config_file, settings)
        for source in SOURCES:
            records = [r for r in data.records if r[0] == config.topic_of(config.source(source))]
            assert report["sources"][source]["indexed"] == len(records), source
            assert report["sources"][source]["acks"] == len(records), source
            assert report["sources"][source]["lag"] == 0
        assert report["counter"]["fired"] == len(data.expected)
        assert report["counter"]["lag"] == 0
        assert report["enricher"]["enriched"] == len(data.expected)
        assert report["enricher"]["lag"] == 0
        assert len(read_topic(settings, config.ready_topic)) == len(data.expected)
    finally:
        apps.stop()
        drop(config)
