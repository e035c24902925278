"""Ship Fusion's runtime to the executors: a zip of its packages for ``spark.submit.pyFiles``.

Executors run a Python that has Fusion's dependencies (pyspark, pyarrow,
confluent-kafka, elasticsearch, pydantic, tenacity) but need not have Fusion
itself: Spark hands every executor this zip and puts it on ``sys.path``. The
zip is built from the packages this process imported, named by a hash of
their content, and kept under ``<home>/pyfiles``: the same code is zipped once.

It holds the runtime only: the stages, ``indexers`` and ``acks``, and the
rooms they talk through. The command line, the local servers and the
benchmarks stay behind (:data:`LEFT_OUT`); a run that needs one of them on its
executors (the benchmark's naive baseline) names it (``ships``). Nothing in
the zip imports what it leaves out at module level
(``tests/unit/spark/test_shipping.py``).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("fusion", "indexers", "acks")
# Modules and packages the executors never run.
LEFT_OUT = frozenset({"fusion.bench", "fusion.cli", "fusion.infra", "fusion.__main__"})


def package_zip(home: Path, also: Iterable[str] = ()) -> Path:
    """The zip of Fusion's runtime as imported here, with the ``also`` packages (built once)."""
    files = sorted(shipped(also))
    digest = hashlib.sha256()
    for root, path in files:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    target = home / "pyfiles" / f"fusion-{digest.hexdigest()[:16]}.zip"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        # A temporary name of this process's own: two processes starting together (two
        # `fusion run`s, or parallel test sessions) each write whole zips, and the last
        # rename wins with one as good as the other.
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-")
        os.close(fd)
        tmp = Path(name)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for root, path in files:
                archive.write(path, str(path.relative_to(root)))
        tmp.replace(target)
    return target


def shipped(also: Iterable[str] = ()) -> list[tuple[Path, Path]]:
    """(root, file) of every file the zip holds: ``file`` relative to ``root`` is its name."""
    left_out = {name.replace(".", "/") for name in LEFT_OUT - set(also)}
    found = []
    for name in PACKAGES:
        package_dir = Path(importlib.import_module(name).__file__ or "").parent
        root = package_dir.parent
        found += [
            (root, path)
            for path in package_dir.rglob("*")
            if path.is_file()
            and "__pycache__" not in path.parts
            and path.suffix != ".pyc"
            and not _under(path.relative_to(root), left_out)
        ]
    return found


def _under(relative: Path, left_out: set[str]) -> bool:
    module = relative.with_suffix("").as_posix() if relative.suffix == ".py" else ""
    return module in left_out or any(parent.as_posix() in left_out for parent in relative.parents)
