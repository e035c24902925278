"""`fusion run` as an operator meets it: a second instance of a pipeline, a query that dies.

Each test runs `fusion run` as its own process (its own Spark driver and JVM)
and reads what it says on stderr: one line naming the problem, no stack trace.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.errors import ExitCode
from fusion.core.events import now_iso
from fusion.core.machine.holder import Holder
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.elastic.lease import Lease
from fusion.kafka import topics as kafka_topics
from tests.integration.es_proxy import CountingProxy
from tests.integration.pipelines import (
    doc_count,
    drop,
    end_offsets,
    read_raw,
    source_record,
    write_config_file,
)
from tests.integration.runs import timed

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


# What ends the first process: in the single layout another machine's process takes its
# components over (as after it could not reach Elasticsearch for its lease's length) and it
# stops; in stages it is killed with SIGKILL and the next process takes over at once.
ENDS = {"single": "taken over", "stages": "killed"}


@pytest.mark.parametrize("layout", ENDS)
def test_one_process_per_component_a_second_refused_a_killed_one_taken_over_at_once(
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

            components = _leased(es, config)
            if ENDS[layout] == "taken over":
                _take_over(es, config, components)
                code = older.wait(timeout=120)  # its next look: a third of its lease at most
                line = _one_line_error(older.stderr.read() if older.stderr else "")
                assert code == ExitCode.ALREADY_RUNNING, line
                assert "another process took its" in line, line
                assert "pid 4242 on another-machine" in line, line
                return
            os.killpg(older.pid, signal.SIGKILL)
            older.wait(timeout=30)
        # Its holder is gone from this machine: the next process takes over at once, not
        # after its lease (a lease of 10 minutes here).
        lease = Lease(es, config.lease_index, config.name, components, lease_seconds=600.0)
        took = timed(lease.acquire, limit=60.0)
        lease.release()
        assert took < 2.0, f"the takeover of a killed holder took {took:.1f} s"
    finally:
        drop(config)


def _leased(es: Elasticsearch, config: PipelineConfig) -> list[str]:
    """The components a running process holds leases on."""
    es.indices.refresh(index=config.lease_index)
    found = es.search(index=config.lease_index, query={"match_all": {}})["hits"]["hits"]
    assert found and all(not hit["_source"]["released"] for hit in found)
    return sorted(hit["_id"] for hit in found)


def _take_over(es: Elasticsearch, config: PipelineConfig, components: list[str]) -> None:
    """Write another machine's process over ``components``' lease documents."""
    other = dataclasses.replace(
        Holder.this_process(), host="another-machine", boot="b", pid=4242, token="t"
    )
    for component in components:
        document = other.to_doc() | {"released": False, "renewed_at": now_iso()}
        es.index(index=config.lease_index, id=component, document=document)


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
    settings: Settings, tmp_path: Path, cluster_settings: None
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
        ends = end_offsets(settings, config.dlq_topic)
        assert all(end == 0 for end in ends.values()), "a dead letter was written"
    finally:
        es.cluster.put_settings(persistent={"action.auto_create_index": None})
        drop(config)
