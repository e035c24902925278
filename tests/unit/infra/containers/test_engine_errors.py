"""The offline path's failures are one line that names the fix, the step or the log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fusion.infra.containers import engine as docker
from fusion.infra.errors import BuildStepError, EngineError


def test_no_engine_and_no_dockerd_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(docker, "answers", lambda host: False)
    monkeypatch.setattr(docker.shutil, "which", lambda name: None)
    with pytest.raises(EngineError, match=r"apt-get install docker.io.*DOCKER_HOST"):
        docker.find_or_start(tmp_path, install=False)


def test_a_failed_build_step_names_itself_and_its_log(tmp_path: Path) -> None:
    log = tmp_path / "debootstrap.log"
    command = [sys.executable, "-c", "import sys; print('E: no mirror'); sys.exit(1)"]
    with pytest.raises(BuildStepError) as failed:
        docker._run_step("debootstrap", command, docker.Engine(None), log)
    assert str(failed.value) == f"building the images failed at 'debootstrap': its log is {log}"
    assert "E: no mirror" in log.read_text()
