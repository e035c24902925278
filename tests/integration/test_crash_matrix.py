"""The crash matrix: `fusion run` is SIGKILLed at the dangerous points, restarted, and checked.

Each run is a separate `fusion run` process (its own Spark driver and JVM)
on the same checkpoints. ``FUSION_CRASH_AT`` makes the process SIGKILL itself
at one named point (:mod:`fusion.faults`); the test then kills what is left of
its process group, like a lost machine, and starts the next run. A run that
exits any other way fails the test: every kill point must really be hit.
After the last, clean run the result is compared with the generator's
expected join: every complete key enriched, none missing, no key fired twice
in the committed ready topic, no incomplete key fired.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from fusion import clients, topology
from fusion.config import PipelineConfig
from fusion.generator import Dataset, GenOptions, build_dataset, produce
from fusion.settings import Settings
from tests.integration.pipelines import drop, enriched_docs, read_topic, write_config_file

BIN = Path(sys.executable).parent
SOURCES = ["billing", "insurance", "medicine"]
# (crash point, records produced just before the run)
FIRST_WAVE = [
    "indexer.after_bulk",  # documents in Elasticsearch, no ack yet
    "counter.before_commit",  # ready events produced inside the open transaction
    "counter.after_commit",  # ready events committed, Spark's batch not
    "enricher.after_lookup",  # between the ready event and the enriched write
    "enricher.after_write",  # enriched documents written, the enriched topic not
]
SECOND_WAVE = [
    "indexer.before_bulk",  # during indexing
    "enricher.before_commit",  # enriched records inside the open transaction
]
RUN_TIMEOUT = 240.0


def _run(config_file: Path, settings: Settings, crash_at: str | None) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        FUSION_HOME=str(settings.runtime.home),
        FUSION_SPARK_MASTER="local[2]",
        FUSION_SPARK_SHUFFLE_PARTITIONS="2",
    )
    env.pop("FUSION_CRASH_AT", None)
    if crash_at is not None:
        env["FUSION_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [BIN / "fusion", "run", "--config", str(config_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the JVM goes down with it
    )


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def _crash(config_file: Path, settings: Settings, point: str) -> None:
    process = _run(config_file, settings, point)
    try:
        code = process.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise AssertionError(f"the run never reached crash point {point}") from None
    stderr = process.stderr.read() if process.stderr else ""
    _kill_group(process)
    assert code == -signal.SIGKILL, f"run for {point} exited with {code}: {stderr[-2000:]}"


def _finish(config: PipelineConfig, config_file: Path, settings: Settings, data: Dataset) -> None:
    """A clean run until every complete key is enriched, then a few more batches of quiet."""
    process = _run(config_file, settings, None)
    es = clients.elasticsearch(config.elasticsearch)
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the clean run did not enrich every key"
            es.indices.refresh(index=config.enriched_index)
            if es.count(index=config.enriched_index)["count"] >= len(data.expected):
                break
            time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _kill_group(process)
        _kill_group(process)


def test_kill_dash_nine_at_seven_points_loses_nothing_and_fires_nothing_twice(
    settings: Settings, tmp_path: Path
) -> None:
    config_file = write_config_file(
        settings, tmp_path / "pipeline.toml", SOURCES, trigger_interval="200 milliseconds"
    )
    config = PipelineConfig.load(config_file, env={})
    options = GenOptions(keys=80, seed=21, duplicate_rate=0.2, missing_rate=0.2)
    data = build_dataset(config, options)
    half = len(data.records) // 2
    topology.ensure_topics(config)
    try:
        produce(config, data.records[:half])
        for point in FIRST_WAVE:
            _crash(config_file, settings, point)
        produce(config, data.records[half:])
        for point in SECOND_WAVE:
            _crash(config_file, settings, point)
        _finish(config, config_file, settings, data)

        ready = Counter(key for key, _ in read_topic(settings, config.ready_topic))
        assert set(ready) == set(data.expected), "complete keys fire, incomplete keys do not"
        assert max(ready.values()) == 1, [k for k, n in ready.items() if n > 1]
        docs = enriched_docs(settings, config)
        assert set(docs) == set(data.expected)
        for key, doc in docs.items():
            doc.pop("fusion")
            assert doc == data.expected[key]
        on_topic = Counter(key for key, _ in read_topic(settings, config.enriched_topic))
        assert on_topic == Counter(set(data.expected)), "enriched topic: each key exactly once"
        assert read_topic(settings, config.dlq_topic) == []
    finally:
        drop(config)
