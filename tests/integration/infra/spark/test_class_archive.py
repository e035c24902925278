"""The driver's JVM maps the archive of Spark's classes (fusion.infra.spark.class_archive)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusion.core.settings import Settings
from fusion.infra.spark import class_archive


def test_the_drivers_jvm_maps_the_archive_of_sparks_classes(spark: Any, settings: Settings) -> None:
    archive = class_archive.archive_path(settings.runtime.home)
    assert archive.is_file()
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    # A JVM that could not use the archive says nothing and loads as before: its memory
    # map is what shows the classes came from the file.
    assert str(archive) in Path(f"/proc/{pid}/maps").read_text()
