"""The SparkSession: Fusion's jars, its Python daemon, the JVM's memory limits and logs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from fusion.core import ENV_NAMES, PipelineConfig, Settings
from fusion.spark import daemon, memory_limits
from fusion.spark import logs as spark_logs
from fusion.spark.shipping import package_zip

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_jars(settings: Settings) -> list[Path]:
    """What ``spark.jars`` needs: the Kafka connector and Fusion's JVM classes."""
    # The driver's: from the machine's cache (fusion.infra), which the executors' zip
    # leaves out (fusion.spark.shipping), so imported here rather than with the module.
    from fusion.infra import ArtifactCache
    from fusion.infra import jvm_code as jvm

    home = settings.runtime.home
    cache = ArtifactCache(home)
    kafka = cache.spark_kafka_jars()
    return [*kafka, jvm.fusion_jar(home, kafka, cache.java_compiler)]


DAEMON_MODULE = daemon.CONF_KEY


def preloading_daemon(
    conf: dict[str, str], master: str, python: str, submitted: bool
) -> dict[str, str]:
    """``conf`` with Fusion's Python daemon (:mod:`fusion.spark.daemon`) where it can run.

    Only where the executors run this very interpreter, which has Fusion
    installed: a local master started here. A cluster's or spark-submit's
    executors may have only Fusion's dependencies (its code arrives as a zip
    with each task, too late for a daemon), so they keep PySpark's. A daemon
    set in ``[spark.conf]`` wins.
    """
    local = master.startswith("local") and not submitted
    if not local or python != sys.executable or DAEMON_MODULE in conf:
        return conf
    return {**conf, DAEMON_MODULE: daemon.MODULE}


def spark_session(
    settings: Settings,
    app_name: str | None = None,
    submitted: bool = False,
    reserve_memory: bool = False,
    ships: Iterable[str] = (),
) -> SparkSession:
    """A SparkSession with the Kafka connector on ``spark.jars`` and the configured state store.

    The connector jars are fetched into the Fusion cache on first use; Spark's
    own Ivy resolver is never asked, so no repository beyond Maven's is needed.
    Fusion's own packages reach the executors as a zip (:mod:`fusion.spark.shipping`).
    Under ``spark-submit`` (``submitted``), master, jars and py-files come from
    its command line instead. ``reserve_memory``: the JVM that runs the tasks
    commits its heap at start (``fusion run``; :mod:`fusion.spark.memory_limits`).
    ``ships``: packages the zip leaves out that this run's tasks need.
    """
    from pyspark.sql import SparkSession

    from fusion.infra.spark import class_archive  # the driver's, as in spark_jars

    # Executors' Python workers run this interpreter unless told otherwise.
    python = settings.spark.python or os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    builder = SparkSession.builder.appName(app_name or settings.spark.app_name)
    if settings.spark.master.startswith("local") and not submitted:
        # A local run serves no one else: its driver (block manager, RPC) listens
        # on the loopback only, unless SPARK_LOCAL_IP or the conf says otherwise.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if submitted:
        conf = settings.spark.as_spark_conf([])
        del conf["spark.jars"]
    else:
        builder = builder.master(settings.spark.master)
        conf = settings.spark.as_spark_conf(spark_jars(settings))
    conf = preloading_daemon(conf, settings.spark.master, python, submitted)
    if isinstance(settings, PipelineConfig):
        # What the tasks hold is bounded by their chunks: so is the JVM that runs them.
        chunk = settings.pipeline.task_chunk_bytes
        master = settings.spark.master
        conf = memory_limits.with_task_limits(conf, master, chunk, reserve_memory)
    # The tests' fault injection must reach the executors' Python workers too.
    conf |= {
        f"spark.executorEnv.{name}": os.environ[name] for name in ENV_NAMES if name in os.environ
    }
    # Spark's own log lines go to a file (fusion.spark.logs), the terminal stays Fusion's.
    app = app_name or settings.spark.app_name
    logs = spark_logs.java_options(settings.spark, settings.runtime.home, app)
    logs_file = spark_logs.log_file(settings.spark, settings.runtime.home, app)
    conf["spark.driver.extraJavaOptions"] = (
        f"{conf.get('spark.driver.extraJavaOptions', '')} {logs}"
    )
    sharing = class_archive.java_option(settings.runtime.home)
    if sharing and settings.spark.class_sharing and not submitted:
        # Under spark-submit the driver's JVM is started already.
        conf["spark.driver.extraJavaOptions"] += f" {sharing}"
    for key, value in conf.items():
        builder = builder.config(key, value)
    with spark_logs.stderr_to(None if settings.spark.log_to_console else logs_file):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel(settings.spark.log_level)
    if not submitted:
        session.sparkContext.addPyFile(str(package_zip(settings.runtime.home, ships)))
    return session
