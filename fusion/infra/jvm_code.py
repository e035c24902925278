"""Fusion's JVM code, compiled on first use into the runtime cache.

Two packages: ``fusion.counter`` (the counter's keyed state) and
``fusion.output`` (the executors' exactly-once Kafka writer). The Java sources
ship in the package (``src/``) and are compiled against the installed
pyspark's own jars and the Kafka client Spark's connector brings, so the
classes always match what they run with. The jar is cached under
``<runtime home>/artifacts/``, named by a digest of the sources and the
pyspark version; it reaches the executors on ``spark.jars`` with the Kafka
connector.

The compiler is the JDK's ``javac`` when there is one; on a Java runtime
without it, the Eclipse compiler (ECJ, one jar from Maven Central, fetched
into the same cache as Kafka's), so no command needs a JDK.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from fusion.infra.errors import CompileError
from fusion.infra.java import java_home

SOURCES = Path(__file__).parents[1] / "jvm" / "src"  # fusion/jvm/src: the Java itself


def jar_path(home: Path) -> Path:
    """Where the jar of the current sources is cached (whether or not it is built yet)."""
    return home / "artifacts" / f"fusion-jvm-{_digest(sorted(SOURCES.rglob('*.java')))}.jar"


def fusion_jar(
    home: Path, classpath: Sequence[Path] = (), ecj: Callable[[], Path] | None = None
) -> Path:
    """The jar of Fusion's JVM classes, compiled now unless the cache has it.

    ``classpath``: jars beyond pyspark's to compile against (the Kafka client).
    ``ecj``: where to get the Eclipse compiler's jar when there is no ``javac``.
    """
    sources = sorted(SOURCES.rglob("*.java"))
    target = jar_path(home)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fusion-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        _compile(sources, classes, classpath, ecj)
        jar = Path(tmp) / "fusion-jvm.jar"
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(jar, target)  # atomic: a concurrent build finds a whole jar or none
    return target


def _compile(
    sources: list[Path], classes: Path, classpath: Sequence[Path], ecj: Callable[[], Path] | None
) -> None:
    jars = sorted(_pyspark_jars().glob("*.jar")) + list(classpath)
    javac = find_javac()
    if javac is not None:
        compiler = [javac]
    elif ecj is not None:
        compiler = [str(java_home() / "bin" / "java"), "-jar", str(ecj())]
    else:
        raise CompileError("no javac, and no Eclipse compiler to fall back on")
    command = [
        *compiler,
        "--release",
        "17",
        "-nowarn",
        "-encoding",
        "UTF-8",
        "-cp",
        os.pathsep.join(map(str, jars)),
        "-d",
        str(classes),
        *map(str, sources),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stderr + result.stdout).splitlines()
        errors = [line for line in output if "error" in line.lower()]
        raise CompileError(errors[0].strip() if errors else f"exit {result.returncode}")


def find_javac() -> str | None:
    """The JDK's compiler (``JAVA_HOME``'s, else the one on PATH), or None on a bare runtime."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


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
