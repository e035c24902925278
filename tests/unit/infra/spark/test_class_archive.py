from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from fusion.infra.spark import class_archive


def test_the_option_names_the_archive_once_it_is_built(tmp_path: Path) -> None:
    archive = class_archive.archive_path(tmp_path)
    assert class_archive.java_option(tmp_path) is None

    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")

    assert class_archive.java_option(tmp_path) == f"-XX:SharedArchiveFile={archive}"


def test_another_pyspark_needs_another_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = class_archive.archive_path(tmp_path)
    version = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "0.0" if name == "pyspark" else version(name)
    )

    after = class_archive.archive_path(tmp_path)

    assert after != before and after.parent == before.parent == tmp_path / "artifacts"
