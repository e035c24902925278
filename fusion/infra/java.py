"""Find a Java 17+ runtime for Kafka and Elasticsearch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from fusion.errors import ToolMissingError

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


def _major_version(java: Path) -> int:
    result = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        return 0
    major = int(match.group(1))
    # Java 8 and older report "1.8.0".
    return int(match.group(2) or 0) if major == 1 else major
