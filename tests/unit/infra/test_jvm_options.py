"""[runtime] jvm_options reaches the command line of every server JVM `fusion infra up` starts."""

from __future__ import annotations

import shlex
from pathlib import Path

from fusion.core.settings import Settings
from fusion.infra.cdc.connect import LocalConnect
from fusion.infra.elasticsearch import _jvm_options
from fusion.infra.registry.apicurio import LocalRegistry
from fusion.infra.runtime import LocalRuntime

OPTIONS = ["-XX:TieredStopAtLevel=1", "-Xss2m"]


def _runtime(home: Path, options: list[str]) -> LocalRuntime:
    env = {"FUSION_HOME": str(home)}
    if options:  # none: the variable unset, as on a machine that never set it
        env["FUSION_RUNTIME_JVM_OPTIONS"] = shlex.join(options)
    runtime = LocalRuntime.from_settings(Settings.load(env=env).runtime)
    # The artifacts' directories, as a fetch leaves them (nothing is downloaded here).
    (runtime.cache.kafka_dir / "libs").mkdir(parents=True, exist_ok=True)
    (runtime.cache.elasticsearch_dir / "dist" / "elasticsearch").mkdir(parents=True, exist_ok=True)
    return runtime


def _before(command: list[str], marker: str) -> list[str]:
    """The JVM's own options: what comes before ``marker`` (its class path or jar)."""
    return command[: command.index(marker)]


def test_kafka_and_elasticsearch_start_with_them(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, OPTIONS)
    assert _before(runtime.kafka()._java("kafka.Kafka"), "-cp")[-len(OPTIONS) - 1 : -1] == OPTIONS
    es = runtime.elasticsearch()
    lines = _jvm_options(es.heap, es.dir, es.jvm_options).splitlines()
    assert lines[0] == "-Xms512m" and lines[-len(OPTIONS) :] == OPTIONS


def test_none_by_default(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, [])
    assert not any(o.startswith("-XX:Tiered") for o in runtime.kafka()._java("kafka.Kafka"))
    es = runtime.elasticsearch()
    assert "Tiered" not in _jvm_options(es.heap, es.dir, es.jvm_options)
    assert runtime.spark(workers=1).environment()["SPARK_DAEMON_JAVA_OPTS"] == ""


def test_the_spark_cluster_connect_and_the_registry_start_with_them(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, OPTIONS)
    environment = runtime.spark(workers=2).environment()
    assert shlex.split(environment["SPARK_DAEMON_JAVA_OPTS"]) == OPTIONS
    connect = LocalConnect(tmp_path, tmp_path, jvm_options=OPTIONS).command(tmp_path / "w")
    assert set(OPTIONS) <= set(_before(connect, "-cp"))
    registry = LocalRegistry(tmp_path, tmp_path, jvm_options=OPTIONS).command(8081)
    assert set(OPTIONS) <= set(_before(registry, "-jar"))
