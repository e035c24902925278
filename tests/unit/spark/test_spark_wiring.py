"""The Spark settings Fusion chooses per query, and how it reads Spark's progress reports."""

from __future__ import annotations

from typing import Any

import pytest

from fusion.core.settings import SparkSettings, local_task_slots
from fusion.observe import Figures
from fusion.observe.metrics import Metrics
from fusion.spark.listener import ProgressListener
from fusion.spark.queries import is_local
from tests.unit.core.test_config import lifecycle_config


@pytest.mark.parametrize(
    ("pipeline", "notes", "idle"),
    [
        ({"state_ttl": None}, {}, False),  # no deadline: no timer is ever registered
        ({}, {}, True),  # a required source without a timeout waits until state_ttl
        ({"timeout": "10m"}, {}, True),
        ({}, {"timeout": "90s", "required": False}, True),  # an optional source's wait
    ],
)
def test_the_counter_keeps_a_deadline_clock_only_for_deadlines(
    pipeline: dict[str, Any], notes: dict[str, Any], idle: bool
) -> None:
    assert lifecycle_config(pipeline, notes).has_deadlines is idle


@pytest.mark.parametrize(
    ("uri", "local"),
    [
        ("/var/lib/fusion/clinic", True),
        ("file:///var/lib/fusion", True),
        ("hdfs://namenode:8020/fusion", False),
        ("s3a://bucket/fusion", False),
    ],
)
def test_only_local_checkpoints_use_the_file_system_checkpoint_manager(
    uri: str, local: bool
) -> None:
    assert is_local(uri) is local


def test_local_mode_runs_more_task_threads_than_cores() -> None:
    slots = local_task_slots()
    assert slots >= 8
    assert SparkSettings().master == f"local[{slots},4]"


def test_a_progress_report_is_counted_from_its_json() -> None:
    listener = ProgressListener()
    metrics = Metrics()
    listener.pipelines["clinic-"] = metrics
    report = {
        "name": "clinic-counter",
        "timestamp": "2026-11-29T11:18:52.123Z",
        "numInputRows": 12,
        "durationMs": {"triggerExecution": 340, "addBatch": 300, "queryPlanning": 25},
        "stateOperators": [
            {"numRowsUpdated": 5, "numRowsTotal": 40},
            {"numRowsUpdated": 1, "numRowsTotal": 2},
        ],
    }
    listener.on_progress(report)
    listener.on_progress({"name": "other-counter", "numInputRows": 99})
    listener.on_progress({"name": "clinic-counter", "numInputRows": 0, "stateOperators": []})
    later = {"timestamp": "2026-11-29T11:18:53.000Z", "durationMs": {"triggerExecution": 9}}
    listener.on_progress(report | later)

    assert metrics.get("input.counter") == 24
    # The first batch that read rows: when it started, what it read, how long it took.
    assert Figures(metrics.counts()).first_batch_at("counter") == 1_795_951_132.123
    assert Figures(metrics.counts()).first_batch("counter") == (12, 0.34)
    assert Figures(metrics.counts()).first_batch_at("single") is None
    assert metrics.get("busy_ms.counter") == 349
    # Where the first batch's time went, phase by phase; two batches that read rows.
    assert metrics.get("phase_ms.counter.addBatch") == 300
    assert metrics.get("phase_ms.counter.queryPlanning") == 25
    assert metrics.get("phase_ms.counter.triggerExecution") == 0
    assert metrics.get("batches.counter") == 2
    assert metrics.get("state.counter.updated") == 12
    assert metrics.get("state.counter.rows") == 42


def test_a_query_is_running_from_sparks_start_event_to_its_end_event() -> None:
    listener = ProgressListener()
    clinic, other = Metrics(), Metrics()
    listener.pipelines |= {"clinic-": clinic, "other-": other}
    listener.on_started("run-1", "clinic-counter")
    listener.on_started("run-2", "clinic-enricher")
    listener.on_started("run-3", "other-counter")
    listener.on_terminated("run-1")
    listener.on_terminated("run-unknown")  # a query of no attached pipeline

    assert not Figures(clinic.counts()).running("counter")
    assert Figures(clinic.counts()).running("enricher")
    assert Figures(other.counts()).running("counter")
    assert not Figures(clinic.counts()).running("single")  # never started


@pytest.mark.parametrize(("cores", "partitions"), [(1, 2), (2, 2), (3, 2), (8, 4), (None, 2)])
def test_the_counters_state_takes_one_partition_per_two_cores_and_two_at_least(
    monkeypatch: pytest.MonkeyPatch, cores: int | None, partitions: int
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)

    assert SparkSettings().shuffle_partitions == partitions
    conf = SparkSettings().as_spark_conf([])
    assert conf["spark.sql.shuffle.partitions"] == str(partitions)
