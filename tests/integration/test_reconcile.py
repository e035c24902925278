"""`fusion reconcile` after the ack topic was deleted and recreated while keys were in flight.

One module-wide story: 10 keys enriched by the pipeline, 8 indexed whose acks
are then lost, 3 with only one source. Each test reconciles it its own way:
in this process; as `fusion reconcile` killed after its first slice committed
and run again; and through an Elasticsearch outage in the middle of its scan.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from fusion.bench.generator import produce
from fusion.core import faults
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import topics as kafka_topics
from fusion.ops.reconcile import STAGE, reconcile
from fusion.spark.jvm_writer import writer_spec
from fusion.spark.tasks import Job
from tests.integration.conftest import ServerControl
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    read_topic,
    run_pipeline,
    source_record,
    write_config_file,
)

BIN = Path(sys.executable).parent
JOINED = [f"A{i}" for i in range(10)]  # enriched by the pipeline
LOST = [f"B{i}" for i in range(8)]  # indexed, then their acks are gone
HALF = [f"C{i}" for i in range(3)]  # only billing: not complete anywhere
OUTAGE_SECONDS = 10.0


@dataclass
class Lost:
    config: PipelineConfig
    config_file: Path


@pytest.fixture
def lost(spark: Any, settings: Settings, tmp_path: Path) -> Iterator[Lost]:
    with _lost_acks(spark, settings, tmp_path) as lost:
        yield lost


@contextlib.contextmanager
def _lost_acks(spark: Any, settings: Settings, tmp_path: Path) -> Iterator[Lost]:
    """The story up to the lost acks."""
    # The indexers run alone while the acks are lost: one query per stage.
    config_file = write_config_file(
        settings, tmp_path / "p.toml", ["billing", "insurance"], layout="stages"
    )
    config = PipelineConfig.load(config_file, env={})

    def records(keys: list[str], sources: list[str]) -> list[tuple[str, str, bytes]]:
        return [source_record(config, s, k, n=1) for k in keys for s in sources]

    try:
        produce(config, records(JOINED, ["billing", "insurance"]))
        run_pipeline(spark, config, lambda m: m.get("enricher.enriched") >= 10)
        produce(config, records(LOST, ["billing", "insurance"]) + records(HALF, ["billing"]))
        run_pipeline(spark, config, lambda m: m.total(".indexed") >= 19, only="indexers")
        kafka_topics.delete_topics(config, [config.acks_topic])
        kafka_topics.ensure_topics(config)
        yield Lost(config, config_file)
    finally:
        drop(config)


def _reconcile_process(lost: Lost, settings: Settings, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [BIN / "fusion", "reconcile", "--json", "--config", str(lost.config_file)],
        env=dict(os.environ, FUSION_HOME=str(settings.runtime.home), **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _report(process: subprocess.Popen[str], timeout: float = 240) -> dict[str, Any]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()  # not left running against the next test's servers
        raise AssertionError(f"fusion reconcile still ran after {timeout:.0f} s") from None
    assert process.returncode == 0, err[-3000:]
    report: dict[str, Any] = json.loads(out[out.index("{") :])
    return report


def _committed_slices(spark: Any, config: PipelineConfig) -> int:
    """How many slices of the planned run committed, read from their markers in Kafka now.

    Through the JVM's admin client, without waiting for stable offsets (the killed
    slice's transaction is still open): librdkafka at times returns a marker's metadata
    with stray bytes that Python cannot even decode.
    """
    plan_file = Path(urlparse(config.checkpoint(STAGE)).path) / "plan.json"
    plan = json.loads(plan_file.read_text())
    spec = writer_spec(config, Job(STAGE, STAGE, plan["run"], 0, 1 << 20), {})
    writer = spark._jvm.fusion.output.TransactionalWriter
    queries = [writer.committedQuery(spec, f"slice-{n}") for n in range(plan["slices"])]
    return sum(query == plan["run"] for query in queries)


def _enriched_once(settings: Settings, config: PipelineConfig) -> None:
    assert sorted(enriched_docs(settings, config)) == sorted(JOINED + LOST)
    topic = Counter(key or "" for key, _ in read_topic(settings, config.enriched_topic))
    assert topic == Counter(JOINED + LOST), "each key once on the enriched topic"


def test_reconcile_enriches_exactly_the_keys_whose_acks_were_lost(
    spark: Any, settings: Settings, lost: Lost
) -> None:
    report = reconcile(spark, lost.config)
    again = reconcile(spark, lost.config)

    assert (report.scanned, report.complete, report.up_to_date) == (21, 18, 10)
    assert (report.planned, report.enriched, report.dead_letters) == (8, 8, 0)
    _enriched_once(settings, lost.config)
    assert (again.planned, again.enriched) == (0, 0)


@pytest.mark.parametrize(
    "point",
    [
        "after_commit",  # a slice committed: the resumed run skips it
        # A slice's transaction is open with its marker inside: the resumed run must not
        # wait for it to time out, and redoes the slice.
        "before_commit",
    ],
)
def test_a_resumed_reconcile_writes_no_slice_twice(
    spark: Any, settings: Settings, lost: Lost, tmp_path: Path, point: str
) -> None:
    config = lost.config
    # The executor's JVM halts at the point in a slice's transaction: kill -9.
    crashed = _reconcile_process(
        lost,
        settings,
        FUSION_CRASH_AT=f"reconcile.{point}:jvm",
        FUSION_FAULT_DIR=str(tmp_path),
    )
    out, err = crashed.communicate(timeout=240)
    assert crashed.returncode != 0, f"not killed; its output ends with: {out[-1500:]} {err[-1500:]}"
    assert faults.hit(tmp_path, f"reconcile.{point}"), "killed in its first slice"
    # What the slices that committed published: their keys, each with its enriched document.
    first = {key or "" for key, _ in read_topic(settings, config.enriched_topic)} - set(JOINED)
    es = es_client.connect(config.elasticsearch)
    before = {key: es.get(index=config.enriched_index, id=key)["_seq_no"] for key in first}

    # The slices whose transaction committed before the kill, as Kafka keeps their markers.
    committed = _committed_slices(spark, config)

    # Well inside the open transaction's timeout (the retry budget).
    resumed = _report(_reconcile_process(lost, settings), timeout=120)

    assert resumed["resumed"]
    assert resumed["slices_skipped"] == committed  # exactly those, no more, no fewer
    if point == "after_commit":
        assert committed >= 1, "the killed slice had committed"
    else:
        assert committed < resumed["slices"], "the slice killed in its transaction committed"
    assert resumed["slices_skipped"] < resumed["slices"] or not set(LOST) - first
    assert resumed["enriched"] == len(set(LOST) - first)
    after = {key: es.get(index=config.enriched_index, id=key)["_seq_no"] for key in first}
    assert after == before, "the committed slices' documents were not written again"
    _enriched_once(settings, config)


def test_reconcile_waits_out_an_elasticsearch_outage_during_its_scan(
    spark: Any, tmp_path: Path, server_control: ServerControl
) -> None:
    server_control.require("reconcile's scan retries its _mget through an Elasticsearch outage")
    # On servers of its own: the session's serve the tests running beside it.
    settings = server_control.settings
    with _lost_acks(spark, settings, tmp_path) as lost:
        _reconcile_through_an_outage(settings, lost, tmp_path, server_control)


def _reconcile_through_an_outage(
    settings: Settings, lost: Lost, tmp_path: Path, server_control: ServerControl
) -> None:
    gate = tmp_path / "gate"
    gate.write_text("")
    process = _reconcile_process(lost, settings, FUSION_HOLD_AT=f"reconcile.scan={gate}")
    try:
        _wait_for(Path(f"{gate}.reached").exists, 120, "reconcile to reach its first _mget")
        server_control.stop("elasticsearch")
        gate.unlink()  # its _mget now meets a node that is down
        outage_ends = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < outage_ends:
            assert process.poll() is None, process.communicate()[1][-3000:]
            time.sleep(0.2)
    finally:
        server_control.start()
    report = _report(process)

    assert report["es_retries"] > 0
    assert (report["planned"], report["enriched"]) == (8, 8)
    _enriched_once(settings, lost.config)


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.2)
