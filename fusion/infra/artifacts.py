"""Server and connector artifacts, fetched once with Maven into the Fusion cache.

Layout under ``<home>/artifacts`` (``home`` defaults to ``~/.cache/fusion``)::

    kafka-<version>/libs/*.jar            broker jars (kafka_2.13 and its runtime deps)
    elasticsearch-<version>/              the extracted integ-test-zip distribution
    spark-kafka-<version>/*.jar           Spark's Kafka connector and what it needs
    fusion-jvm-<digest>.jar               Fusion's JVM classes, compiled here
    spark-classes-<digest>.jsa            the JVM's archive of Spark's classes, built here

A directory is built under a temporary name and renamed into place only when
complete, so an interrupted download is retried on the next call and a
complete one is never fetched twice.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fusion.infra import jvm_code as jvm
from fusion.infra.errors import DownloadError, ToolMissingError
from fusion.infra.spark import class_archive

KAFKA_VERSION = "4.4.0"
# From 8.9 on the integ-test-zip's node answers `GET /` with 405 (that handler lives
# in a module it leaves out): Fusion reads health and version from `_cluster/health`
# and `_nodes/_local`, which every distribution serves.
ELASTICSEARCH_VERSION = "8.19.21"
# The Maven repository reachable here serves spark-sql-kafka up to 4.2.0 and
# spark-token-provider-kafka up to 4.0.0; both run on pyspark 4.3.0 (see the
# integration smoke test). Bump these when the 4.3.0 connector is published.
SPARK_KAFKA_VERSION = "4.2.0"

# fusion-jvm is not downloaded: it is Fusion's own Java (the counter), compiled here;
# spark-classes neither: the JVM's archive of Spark's classes (class_archive.py), built here.
ArtifactSet = Literal["kafka", "elasticsearch", "spark-kafka", "fusion-jvm", "spark-classes"]
ARTIFACT_SETS: tuple[ArtifactSet, ...] = (
    "kafka", "elasticsearch", "spark-kafka", "fusion-jvm", "spark-classes",
)  # fmt: skip


def preparing(name: ArtifactSet) -> str:
    """What getting an artifact set means, for progress lines."""
    if name == "spark-classes":
        return "archiving Spark's classes for faster JVM starts"
    if name != "fusion-jvm":
        return f"fetching {name} with Maven"
    if jvm.find_javac() is None:
        return "compiling Fusion's JVM classes with the Eclipse compiler (no javac here)"
    return "compiling Fusion's JVM classes"


@dataclass(frozen=True)
class Coordinate:
    """A Maven artifact, ``group:artifact:version[:type]``."""

    group: str
    artifact: str
    version: str
    type: str = "jar"
    excluded: tuple[str, ...] = ()  # group:artifact of transitive dependencies to leave out
    classifier: str = ""  # e.g. "all": another file of the same version

    def __str__(self) -> str:
        named = f"{self.group}:{self.artifact}:{self.version}:{self.type}"
        return f"{named}:{self.classifier}" if self.classifier else named

    def pom_dependency(self, transitive: bool) -> str:
        left_out = self.excluded if transitive else ("*:*",)
        exclusions = "".join(
            f"<exclusion><groupId>{group}</groupId><artifactId>{artifact}</artifactId></exclusion>"
            for group, _, artifact in (name.partition(":") for name in left_out)
        )
        exclusions = f"<exclusions>{exclusions}</exclusions>" if exclusions else ""
        classifier = f"<classifier>{self.classifier}</classifier>" if self.classifier else ""
        return (
            f"<dependency><groupId>{self.group}</groupId><artifactId>{self.artifact}</artifactId>"
            f"<version>{self.version}</version><type>{self.type}</type>{classifier}"
            f"{exclusions}</dependency>"
        )


KAFKA_BROKER = (
    Coordinate("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
    # The broker logs through slf4j 1.x; this binds it to the log4j2 core it ships.
    Coordinate("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),
)


def elasticsearch_dist(version: str) -> Coordinate:
    """The integ-test-zip distribution of one Elasticsearch version."""
    return Coordinate(
        "org.elasticsearch.distribution.integ-test-zip", "elasticsearch", version, "zip"
    )


# Fetched without their transitive dependencies: pyspark already ships Spark,
# Scala and the compression codecs, and a second copy on the classpath breaks it.
SPARK_KAFKA_CONNECTOR = (
    Coordinate("org.apache.spark", "spark-sql-kafka-0-10_2.13", SPARK_KAFKA_VERSION),
    Coordinate("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", "4.0.0"),
    Coordinate("org.apache.kafka", "kafka-clients", "3.9.2"),
    Coordinate("org.apache.commons", "commons-pool2", "2.13.1"),
)


# The Eclipse compiler, for a Java runtime without javac (jvm_code.py); it runs on Java 17.
ECJ = Coordinate("org.eclipse.jdt", "ecj", "3.46.100")


class ArtifactCache:
    """The on-disk cache of everything the local runtime and Spark need from Maven."""

    def __init__(self, home: Path, es_version: str | None = None) -> None:
        self.home = home
        self.root = home / "artifacts"
        self.es_version = es_version or ELASTICSEARCH_VERSION

    @property
    def kafka_dir(self) -> Path:
        return self.root / f"kafka-{KAFKA_VERSION}"

    @property
    def elasticsearch_dir(self) -> Path:
        return self.root / f"elasticsearch-{self.es_version}"

    @property
    def spark_kafka_dir(self) -> Path:
        return self.root / f"spark-kafka-{SPARK_KAFKA_VERSION}"

    def missing(self) -> list[ArtifactSet]:
        """Names of the artifact sets not yet in the cache."""
        there = {
            "kafka": self.kafka_dir.is_dir(),
            "elasticsearch": self.elasticsearch_dir.is_dir(),
            "spark-kafka": self.spark_kafka_dir.is_dir(),
            "fusion-jvm": jvm.jar_path(self.home).is_file(),
            "spark-classes": class_archive.archive_path(self.home).is_file(),
        }
        return [name for name in ARTIFACT_SETS if not there[name]]

    def fetch(self, name: ArtifactSet) -> None:
        """Make sure one artifact set is in the cache."""
        if name == "kafka":
            self.kafka_libs()
        elif name == "elasticsearch":
            self.elasticsearch_home()
        elif name == "spark-kafka":
            self.spark_kafka_jars()
        elif name == "spark-classes":
            class_archive.build(self.home)
        else:
            jvm.fusion_jar(self.home, self.spark_kafka_jars(), self.java_compiler)

    def kafka_libs(self) -> Path:
        """Directory of the Kafka broker's jars, fetched on first use."""
        if not self.kafka_dir.is_dir():
            with staging(self.kafka_dir) as building:
                maven_copy(KAFKA_BROKER, building / "libs", transitive=True)
        return self.kafka_dir / "libs"

    def elasticsearch_home(self) -> Path:
        """The extracted Elasticsearch distribution (``ES_HOME``), fetched on first use."""
        target = self.elasticsearch_dir
        if not target.is_dir():
            with staging(target) as building:
                dist = elasticsearch_dist(self.es_version)
                maven_copy([dist], building / "download", transitive=False)
                archive = next((building / "download").glob("*.zip"))
                _extract_zip(archive, building / "dist")
                shutil.rmtree(building / "download")
        return next((target / "dist").iterdir())

    def spark_kafka_jars(self) -> list[Path]:
        """The jars to put on ``spark.jars`` for Spark's Kafka source and sink."""
        if not self.spark_kafka_dir.is_dir():
            with staging(self.spark_kafka_dir) as building:
                maven_copy(SPARK_KAFKA_CONNECTOR, building, transitive=False)
        return sorted(self.spark_kafka_dir.glob("*.jar"))

    def java_compiler(self) -> Path:
        """The Eclipse compiler's jar, fetched on first use (only without a JDK's javac)."""
        target = self.root / f"ecj-{ECJ.version}"
        if not target.is_dir():
            with staging(target) as building:
                maven_copy([ECJ], building, transitive=False)
        return next(target.glob("*.jar"))


class staging:
    """Build a directory under a temporary name; rename it into place on success."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __enter__(self) -> Path:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.target.name}-", dir=self.target.parent))
        return self.tmp

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.tmp.rename(self.target)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def require_maven() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissingError(
            "mvn",
            "install Apache Maven (e.g. `apt-get install maven`) to fetch Kafka, "
            "Elasticsearch and the Spark Kafka connector",
        )
    return mvn


def maven_copy(coordinates: Iterable[Coordinate], output: Path, transitive: bool) -> None:
    """Resolve ``coordinates`` through Maven and copy the files into ``output``."""
    mvn = require_maven()
    coordinates = list(coordinates)
    what = ", ".join(str(c) for c in coordinates)
    deps = "".join(c.pom_dependency(transitive) for c in coordinates)
    pom = (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>fusion</groupId><artifactId>fusion-artifacts</artifactId><version>0</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>"
    )
    with tempfile.TemporaryDirectory(prefix="fusion-mvn-") as workdir:
        (Path(workdir) / "pom.xml").write_text(pom)
        argv = [
            mvn,
            "-B",
            "-q",
            "-Dstyle.color=never",
            "-f",
            str(Path(workdir) / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={output}",
            "-DincludeScope=runtime",
        ]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            raise DownloadError(what, "Maven did not finish within 30 minutes") from None
    if result.returncode != 0:
        raise DownloadError(what, _maven_error(result.stdout + result.stderr))


def maven_file(coordinate: Coordinate, output: Path) -> None:
    """One artifact's file into ``output``, without reading its POM.

    For an artifact whose parent POM the repository does not serve (Apicurio
    Registry 3.0.9's): ``copy-dependencies`` needs the descriptor, ``copy`` does not.
    """
    mvn = require_maven()
    artifact = f"{coordinate.group}:{coordinate.artifact}:{coordinate.version}:{coordinate.type}"
    artifact += f":{coordinate.classifier}" if coordinate.classifier else ""
    with tempfile.TemporaryDirectory(prefix="fusion-mvn-") as workdir:
        (Path(workdir) / "pom.xml").write_text(
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>fusion</groupId><artifactId>fusion-file</artifactId><version>0</version>"
            "<packaging>pom</packaging></project>"
        )
        pom = str(Path(workdir) / "pom.xml")
        argv = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", pom, "dependency:copy",
                f"-Dartifact={artifact}", f"-DoutputDirectory={output}"]  # fmt: skip
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            raise DownloadError(str(coordinate), "Maven did not finish within 30 minutes") from None
    if result.returncode != 0:
        raise DownloadError(str(coordinate), _maven_error(result.stdout + result.stderr))


def _maven_error(output: str) -> str:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in output.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if "[ERROR]" in line]
    errors = [line for line in errors if line and not line.startswith(("->", "To see", "Re-run"))]
    return errors[0] if errors else (lines[-1] if lines else "mvn failed without output")


def _extract_zip(archive: Path, target: Path) -> None:
    """Extract keeping the Unix permission bits (zipfile alone drops the exec bits)."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, target))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(path, mode)
