"""`fusion run` as an operator meets it: a second instance of a pipeline, a query that dies.

Each test runs `fusion run` as its own process (its own Spark driver and JVM)
and reads what it says on stderr: one line naming the problem, no stack trace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.errors import ExitCode
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import client as kafka_client
from fusion.kafka import topics as kafka_topics
from tests.integration.es_proxy import CountingProxy
from tests.integration.pipelines import (
    doc_count,
    drop,
    read_raw,
    source_record,
    write_config_file,
)

BIN = Path(sys.executable).parent


@contextlib.contextmanager
def fusion_run(
    config_file: Path, settings: Settings, *args: str
) -> Iterator[subprocess.Popen[str]]:
    env = dict(os.environ, FUSION_HOME=str(settings.runtime.home))
    process = subprocess.Popen(
        [BIN / "fusion", "run", "--config", str(config_file), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _wait(condition: object, timeout: float, what: str, *runs: subprocess.Popen[str]) -> None:
    """Until ``condition()`` holds; fails at once, with its stderr, if one of ``runs`` exited."""
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        for run in runs:
            if run.poll() is not None:
                stderr = run.stderr.read() if run.stderr else ""
                raise AssertionError(f"`fusion run` exited while waiting for {what}: {stderr}")
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.5)


def _one_line_error(stderr: str) -> str:
    """The run's error line; the whole of stderr must hold no Java or Python stack trace."""
    assert "Traceback" not in stderr and "\tat " not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("fusion: error:")]
    assert len(errors) == 1, stderr[-3000:]
    return errors[0]


@pytest.mark.parametrize("layout", ["single", "stages"])
def test_a_second_process_of_a_pipeline_refuses_to_run_naming_the_first(
    settings: Settings, tmp_path: Path, layout: str
) -> None:
    first = write_config_file(settings, tmp_path / "first.toml", ["a", "b"], layout=layout)
    config = PipelineConfig.load(first, env={})
    # The same pipeline from another directory: same name, topics and indexes, its own
    # checkpoints (which would make it read every source from the start again).
    text = first.read_text().replace("-checkpoints", "-checkpoints-elsewhere")
    second = tmp_path / "second.toml"
    second.write_text(text)
    elsewhere = Path(PipelineConfig.load(second, env={}).checkpoint_dir.removeprefix("file://"))
    kafka_topics.ensure_topics(config)
    # In stages, one source's indexer alone; in the single layout, the whole pipeline.
    only = ["--only", "indexer:a"] if layout == "stages" else []
    es = es_client.connect(settings.elasticsearch)
    index = config.index_of(config.source("a"))
    try:
        with fusion_run(first, settings, *only) as older:
            produce(config, [source_record(config, "a", "K1", n=1)])
            acked = lambda: len(read_raw(settings, config.acks_topic))  # noqa: E731
            _wait(lambda: acked() >= 1, 120, "the first process to ack K1", older)
            with fusion_run(second, settings, *only) as newer:
                code = newer.wait(timeout=120)
                line = _one_line_error(newer.stderr.read() if newer.stderr else "")
            assert code == ExitCode.ALREADY_RUNNING, line
            assert f"already runs its indexer:a in another process: pid {older.pid}" in line, line
            # Refused before it wrote anything: no checkpoint, no ack, and the first goes on.
            assert not elsewhere.exists(), sorted(elsewhere.rglob("*"))
            assert acked() == 1
            produce(config, [source_record(config, "a", "K2", n=2)])
            _wait(lambda: doc_count(es, index) >= 2, 120, "the first process to index K2", older)
    finally:
        drop(config)


def test_a_query_that_dies_mid_run_stops_fusion_run_with_one_line(
    settings: Settings, tmp_path: Path
) -> None:
    with CountingProxy(settings.elasticsearch.url) as proxy:
        config_file = write_config_file(
            settings, tmp_path / "p.toml", ["a", "b"], retry_budget_seconds=2
        )
        text = config_file.read_text().replace(settings.elasticsearch.url, proxy.url)
        config_file.write_text(text)
        config = PipelineConfig.load(config_file, env={})
        kafka_topics.ensure_topics(config)
        es = es_client.connect(settings.elasticsearch)
        try:
            with fusion_run(config_file, settings) as run:
                produce(config, [source_record(config, "a", "K1", n=1)])
                index = config.index_of(config.source("a"))
                _wait(lambda: doc_count(es, index) > 0, 120, "K1 indexed", run)
                # Elasticsearch now answers every request with 503 for longer than the budget.
                proxy.fail_with(503)
                produce(config, [source_record(config, "b", "K1", n=2)])
                code = run.wait(timeout=180)
                line = _one_line_error(run.stderr.read() if run.stderr else "")
            # The task's error keeps its class's code: Elasticsearch unavailable past the budget.
            assert code == ExitCode.UNAVAILABLE
            assert "query" in line and "failed" in line and "503" in line, line
            assert "still failing" in line, line
        finally:
            proxy.fail_with(None)
            drop(config)


def test_an_index_deleted_under_a_running_pipeline_stops_it_with_its_name_and_no_dead_letter(
    settings: Settings, tmp_path: Path
) -> None:
    config_file = write_config_file(settings, tmp_path / "p.toml", ["a", "b"])
    config = PipelineConfig.load(config_file, env={})
    kafka_topics.ensure_topics(config)
    es = es_client.connect(settings.elasticsearch)
    index = config.index_of(config.source("b"))
    # As on a cluster with action.auto_create_index off: a write does not bring it back.
    es.cluster.put_settings(persistent={"action.auto_create_index": f"-{config.name}-*,+*"})
    try:
        with fusion_run(config_file, settings) as run:
            produce(config, [source_record(config, "b", "K1", n=1)])
            _wait(lambda: doc_count(es, index) > 0, 120, "K1 indexed", run)
            es.indices.delete(index=index)
            produce(config, [source_record(config, "b", "K2", n=2)])
            code = run.wait(timeout=180)
            line = _one_line_error(run.stderr.read() if run.stderr else "")
        assert code == ExitCode.DEPLOYMENT, line
        assert f"index {index} does not exist" in line and "nothing was dead-lettered" in line
        dlq = config.dlq_topic
        assert all(end == 0 for end in _ends(settings, dlq)), "a dead letter was written"
    finally:
        es.cluster.put_settings(persistent={"action.auto_create_index": None})
        drop(config)


def _ends(settings: Settings, topic: str) -> list[int]:
    consumer = kafka_client.consumer(settings.kafka, "test-ends")
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        ]
    finally:
        consumer.close()
