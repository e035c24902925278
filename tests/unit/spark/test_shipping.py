"""Fusion's code zip, built by two processes at once, is whole for both."""

from __future__ import annotations

import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fusion.spark import shipping


def test_two_builds_at_once_leave_a_whole_zip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_started, second_done = threading.Event(), threading.Event()
    write = zipfile.ZipFile.write

    def slow_write(self: zipfile.ZipFile, *args: Any, **kwargs: Any) -> None:
        # The first build pauses mid-zip while the second builds from start to end.
        if threading.current_thread().name == "first" and not first_started.is_set():
            first_started.set()
            assert second_done.wait(60)
        write(self, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "write", slow_write)
    built: dict[str, Path] = {}
    first = threading.Thread(
        target=lambda: built.update(first=shipping.package_zip(tmp_path)), name="first"
    )
    first.start()
    assert first_started.wait(60)
    built["second"] = shipping.package_zip(tmp_path)
    second_done.set()
    first.join(60)

    assert built["first"] == built["second"]
    with zipfile.ZipFile(built["first"]) as archive:
        assert archive.testzip() is None
        assert "fusion/spark/shipping.py" in archive.namelist()
    assert [p.name for p in built["first"].parent.iterdir()] == [built["first"].name]
