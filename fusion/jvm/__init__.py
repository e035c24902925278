"""Fusion's JVM code, compiled on first use into the runtime cache.

Two packages: ``fusion.counter`` (the counter's keyed state) and
``fusion.output`` (the executors' exactly-once Kafka writer). The Java sources
ship in the package (``src/``) and are compiled against the installed
pyspark's own jars and the Kafka client Spark's connector brings, so the
classes always match what they run with. The jar is cached under
``<runtime home>/artifacts/``, named by a digest of the sources and the
pyspark version; it reaches the executors on ``spark.jars`` with the Kafka
connector.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from fusion.infra.errors import CompileError, ToolMissingError

SOURCES = Path(__file__).parent / "src"
_HINT = (
    "Fusion compiles its JVM counter on first use; install a JDK 17 or newer "
    "(e.g. `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME to one"
)


def jar_path(home: Path) -> Path:
    """Where the jar of the current sources is cached (whether or not it is built yet)."""
    return home / "artifacts" / f"fusion-jvm-{_digest(sorted(SOURCES.rglob('*.java')))}.jar"


def fusion_jar(home: Path, classpath: Sequence[Path] = ()) -> Path:
    """The jar of Fusion's JVM classes, compiled now unless the cache has it.

    ``classpath``: jars beyond pyspark's to compile against (the Kafka client).
    """
    sources = sorted(SOURCES.rglob("*.java"))
    target = jar_path(home)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fusion-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        _javac(sources, classes, classpath)
        jar = Path(tmp) / "fusion-jvm.jar"
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(jar, target)  # atomic: a concurrent build finds a whole jar or none
    return target


def _javac(sources: list[Path], classes: Path, classpath: Sequence[Path]) -> None:
    command = [
        _find_javac(),
        "--release",
        "17",
        "-nowarn",
        "-encoding",
        "UTF-8",
        "-cp",
        os.pathsep.join([str(_pyspark_jars() / "*"), *map(str, classpath)]),
        "-d",
        str(classes),
        *map(str, sources),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if "error:" in line]
        raise CompileError(errors[0].strip() if errors else f"javac exit {result.returncode}")


def _find_javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").is_file():
        return str(Path(java_home) / "bin" / "javac")
    found = shutil.which("javac")
    if found is None:
        raise ToolMissingError("javac", _HINT)
    return found


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _digest(sources: list[Path]) -> str:
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for path in sources:
        digest.update(path.relative_to(SOURCES).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
