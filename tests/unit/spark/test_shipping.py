"""Fusion's code zip, built by two processes at once, is whole for both."""

from __future__ import annotations

import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fusion.spark import shipping
from tests.unit.imports import imports, module_name

ROOT = Path(shipping.__file__).resolve().parents[2]


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


def _names(also: tuple[str, ...] = ()) -> set[str]:
    return {path.relative_to(root).as_posix() for root, path in shipping.shipped(also)}


def test_the_zip_holds_the_runtime_only() -> None:
    names = _names()
    for runtime in ("fusion/spark/shipping.py", "indexers/task.py", "acks/__init__.py"):
        assert runtime in names
    for stage in ("fusion/counter/", "fusion/enricher/", "fusion/kafka/", "fusion/elastic/"):
        assert any(name.startswith(stage) for name in names), stage
    left = [n for n in names if n.startswith(("fusion/bench/", "fusion/cli/", "fusion/infra/"))]
    assert left == [] and "fusion/__main__.py" not in names


def test_a_run_names_the_packages_its_tasks_need_beyond_the_runtime() -> None:
    names = _names(("fusion.bench",))
    assert "fusion/bench/naive.py" in names
    assert not any(n.startswith(("fusion/cli/", "fusion/infra/")) for n in names)


def test_nothing_in_the_zip_imports_a_module_the_zip_leaves_out() -> None:
    tree = [p for package in shipping.PACKAGES for p in (ROOT / package).rglob("*.py")]
    everything = {module_name(p, ROOT) for p in tree}
    shipped = [(root, path) for root, path in shipping.shipped() if path.suffix == ".py"]
    modules = {module_name(path, root) for root, path in shipped}
    missing = {
        path.relative_to(root).as_posix(): sorted(found - modules)
        for root, path in shipped
        if (found := imports(path, everything, load_time=True)) - modules
    }
    assert missing == {}


def test_a_package_hands_its_names_on_from_the_zip(tmp_path: Path) -> None:
    """Executors import Fusion from the zip: each package reads its surface there too
    (:mod:`fusion.core.surface`), with no file of it on disk."""
    built = shipping.package_zip(tmp_path)
    probe = (
        "import sys; "
        f"sys.path = [{str(built)!r}] + [p for p in sys.path if p not in ('', {str(ROOT)!r})]; "
        "sys.meta_path = [f for f in sys.meta_path if '__editable__' not in repr(f)]; "
        "from fusion.core import PipelineConfig; from indexers import index_spec; "
        "import fusion.core; print(fusion.core.__file__, PipelineConfig.__module__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [f"{built}/fusion/core/__init__.py", "fusion.core.config"]
