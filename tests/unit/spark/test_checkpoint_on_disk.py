"""A checkpoint on this machine's disk, read before Spark starts: a lost one refused at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError
from fusion.spark import resume
from fusion.spark.checkpoint import committed_batches, on_this_disk, planned_batches, query_id
from fusion.spark.errors import CheckpointLostError

SIGNS = ["12 records on p.ready", "12 documents in p-enriched"]


def _config(checkpoints: str, **pipeline: Any) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id", "checkpoint_dir": checkpoints} | pipeline,
            "sources": [{"name": "a"}, {"name": "b"}],
        }
    )


def _ran(checkpoint: Path, batches: int) -> None:
    """What Spark leaves in a query's checkpoint after ``batches`` committed batches."""
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "metadata").write_text('{"id":"q-1"}\n')
    for batch in range(batches):
        (checkpoint / "offsets" / str(batch)).write_text('v1\n{"batchTimestampMs":1}\n')
        (checkpoint / "commits" / str(batch)).write_text("v1\n{}\n")
        (checkpoint / "offsets" / f".{batch}.crc").write_text("")


def test_a_file_uri_is_read_from_disk_and_other_stores_are_left_to_spark(tmp_path: Path) -> None:
    checkpoint = tmp_path / "with space" / "single"
    _ran(checkpoint, 3)
    files = on_this_disk(checkpoint.as_uri())
    assert files is not None and files.uri == checkpoint.as_uri()
    assert committed_batches(files) == planned_batches(files) == [0, 1, 2]
    assert query_id(files) == "q-1"
    assert files.read_text("nothing") is None and files.names("nothing") == []
    for uri in ("hdfs://nn:8020/ckpt/single", "s3a://bucket/ckpt", "file://otherhost/ckpt", "/a"):
        assert on_this_disk(uri) is None, uri


def test_a_lost_checkpoint_on_disk_is_refused_before_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resume, "evidence", lambda config, query: SIGNS)
    config = _config(str(tmp_path / "checkpoints"))
    with pytest.raises(CheckpointLostError) as refused:
        resume.check_on_disk(config, ["single"])
    assert "--rebuild-state" in str(refused.value) and SIGNS[0] in str(refused.value)

    rebuilding = _config(str(tmp_path / "checkpoints"), rebuild_state=True)
    assert resume.check_on_disk(rebuilding, ["single"])  # the way on: no refusal


def test_rebuilding_a_checkpoint_that_holds_state_is_refused_before_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resume, "evidence", lambda config, query: SIGNS)
    _ran(tmp_path / "checkpoints" / "single", 2)
    config = _config(str(tmp_path / "checkpoints"), rebuild_state=True)
    with pytest.raises(ConfigError, match="nothing to rebuild"):
        resume.check_on_disk(config, ["single"])
    assert resume.check_on_disk(_config(str(tmp_path / "checkpoints")), ["single"])  # resumes


def test_a_checkpoint_in_another_store_waits_for_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def asked(config: PipelineConfig, query: str) -> list[str]:
        raise AssertionError("a remote checkpoint must not be judged from this disk")

    monkeypatch.setattr(resume, "evidence", asked)
    assert not resume.check_on_disk(_config("hdfs://nn:8020/checkpoints"), ["single"])
