from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from fusion.infra import artifacts
from fusion.infra.artifacts import ArtifactCache, Coordinate
from fusion.infra.errors import ToolMissingError


def test_non_transitive_dependency_excludes_everything() -> None:
    xml = Coordinate("g", "a", "1.0", "zip").pom_dependency(transitive=False)

    assert "<type>zip</type>" in xml
    assert "<exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>" in xml


def test_maven_error_picks_the_first_real_error_line() -> None:
    output = (
        "[INFO] Scanning\n"
        "\x1b[1;31m[ERROR]\x1b[m Failed to execute goal: Could not find artifact x:y:jar:9\n"
        "[ERROR] -> [Help 1]\n"
    )

    assert (
        artifacts._maven_error(output)
        == "Failed to execute goal: Could not find artifact x:y:jar:9"
    )


def test_missing_maven_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")

    with pytest.raises(ToolMissingError, match="mvn not found on PATH: install Apache Maven"):
        artifacts.require_maven()


def test_cache_reports_missing_sets(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    cache.kafka_dir.mkdir(parents=True)

    assert cache.missing() == ["elasticsearch", "spark-kafka", "fusion-jvm", "spark-classes"]


def test_zip_extraction_keeps_exec_bits(tmp_path: Path) -> None:
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("dist/bin/run")
        info.external_attr = 0o755 << 16
        zf.writestr(info, "#!/bin/sh\n")

    artifacts._extract_zip(archive, tmp_path / "out")

    assert (tmp_path / "out/dist/bin/run").stat().st_mode & 0o777 == 0o755


def test_failed_staging_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "kafka-1"

    with pytest.raises(RuntimeError), artifacts.staging(target) as staging:
        (staging / "partial.jar").write_text("x")
        raise RuntimeError("download interrupted")

    assert list(tmp_path.iterdir()) == []
