from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

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


def test_pyspark_installed_again_at_the_same_place_needs_another_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "pyspark"
    (package / "jars").mkdir(parents=True)
    jar = package / "jars" / "spark-core.jar"
    jar.write_bytes(b"classes")
    found = SimpleNamespace(origin=str(package / "__init__.py"))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: found if name == "pyspark" else find_spec(name)
    )
    before = class_archive.archive_path(tmp_path)

    # The same jar, written again: what a fresh install at the same path leaves.
    stat = jar.stat()
    os.utime(jar, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    assert class_archive.archive_path(tmp_path) != before
