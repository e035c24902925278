"""Fixtures of the unit tests: no servers, but Fusion's JVM classes where a test needs them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion.core.settings import Settings
from fusion.infra import jvm_code as jvm
from fusion.infra.artifacts import ArtifactCache


@pytest.fixture(scope="session")
def fusion_jvm() -> Iterator[Any]:
    """A plain JVM (no Spark context) with Fusion's, Spark's and Kafka's classes."""
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    home = Settings.load().runtime.home  # the cache the pipeline uses
    kafka = ArtifactCache(home).spark_kafka_jars()
    jar = jvm.fusion_jar(home, kafka)
    jars = Path(jvm._pyspark_jars())
    port = launch_gateway(
        jarpath=str(next(jars.glob("py4j-*.jar"))),
        classpath=":".join([str(jar), *map(str, kafka), f"{jars}/*"]),
        die_on_exit=True,
    )
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True))
    yield gateway.jvm
    gateway.shutdown()
