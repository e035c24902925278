"""Ship Fusion's code to the executors: a zip of its packages for ``spark.submit.pyFiles``.

Executors run a Python that has Fusion's dependencies (pyspark, pyarrow,
confluent-kafka, elasticsearch, pydantic, tenacity) but need not have Fusion
itself: Spark hands every executor this zip and puts it on ``sys.path``. The
zip is built from the packages this process imported, named by a hash of
their content, and kept under ``<home>/pyfiles``: the same code is zipped once.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

PACKAGES = ("fusion", "indexers", "acks")


def package_zip(home: Path) -> Path:
    """The zip of Fusion's packages as imported here (built on first use)."""
    files = sorted(_sources())
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


def _sources() -> list[tuple[Path, Path]]:
    import importlib

    found = []
    for name in PACKAGES:
        package_dir = Path(importlib.import_module(name).__file__ or "").parent
        root = package_dir.parent
        found += [
            (root, path)
            for path in package_dir.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
        ]
    return found
