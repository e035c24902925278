from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import time
import zipfile
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


@pytest.fixture
def jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pyspark as found by the archive: one jar of classes in a package of its own."""
    package = tmp_path / "site-packages" / "pyspark"
    (package / "jars").mkdir(parents=True)
    found = SimpleNamespace(origin=str(package / "__init__.py"))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: found if name == "pyspark" else find_spec(name)
    )
    path = package / "jars" / "spark-core.jar"
    _write_jar(path, b"classes")
    return path


def _write_jar(path: Path, classes: bytes) -> None:
    """A jar written now, as an installer writes it: with the time of the install."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("org/apache/spark/SparkContext.class", classes)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, time.time_ns()))


def test_the_same_pyspark_installed_again_maps_the_same_archive(tmp_path: Path, jar: Path) -> None:
    before = class_archive.archive_path(tmp_path)

    _write_jar(jar, b"classes")  # a fresh virtualenv at the same path, say

    assert class_archive.archive_path(tmp_path) == before
    assert jar.stat().st_mtime_ns % 1_000_000_000 == class_archive.SETTLED_NS


def test_other_jars_at_the_same_place_need_another_archive(tmp_path: Path, jar: Path) -> None:
    before = class_archive.archive_path(tmp_path)

    _write_jar(jar, b"CLASSES")  # the same size, other contents

    assert class_archive.archive_path(tmp_path) != before


def test_jars_not_ours_to_touch_get_an_archive_per_install(
    tmp_path: Path, jar: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: object, **__: object) -> None:
        raise PermissionError("read-only site-packages")

    def archive_untouched() -> Path:
        with monkeypatch.context() as patch:
            patch.setattr(os, "utime", refused)
            return class_archive.archive_path(tmp_path)

    before = archive_untouched()
    _write_jar(jar, b"classes")  # the same jar, installed again

    assert archive_untouched() != before
