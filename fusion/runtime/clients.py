"""Kafka, Elasticsearch and Spark clients, built from :class:`fusion.core.settings.Settings`.

Nothing here holds state: every function builds a fresh client from the
frozen settings, so the same code talks to the local runtime, to a
testcontainers pair or to a production cluster.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, Elasticsearch
from elasticsearch import TransportError as ESTransportError

from fusion import jvm
from fusion.core.config import PipelineConfig
from fusion.core.errors import CredentialsError, ServiceUnavailableError, TlsTrustError
from fusion.core.settings import ElasticsearchSettings, KafkaSettings, Settings
from fusion.infra.artifacts import ArtifactCache
from fusion.runtime import daemon, memory_limits, spark_logs
from fusion.runtime.faults import ENV_NAMES
from fusion.runtime.shipping import package_zip

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    from pyspark.sql import SparkSession

# librdkafka reports transient retries (coordinator loading, reconnects) as warnings;
# they are retried internally, and real failures surface as errors and exceptions.
kafka_log = logging.getLogger("fusion.kafka")
kafka_log.setLevel(logging.ERROR)
# The start-up check reports what librdkafka logs (a refused login, an untrusted
# certificate) as its own one line, so its log lines would only repeat it.
_check_log = logging.getLogger("fusion.kafka.check")
_check_log.setLevel(logging.CRITICAL + 1)
_check_log.propagate = False


def kafka_admin(settings: KafkaSettings) -> AdminClient:
    from confluent_kafka.admin import AdminClient

    return AdminClient(dict(settings.as_librdkafka_options()), logger=kafka_log)


_SHARED_ADMINS: dict[str, AdminClient] = {}
_SHARED_LOCK = threading.Lock()


def shared_kafka_admin(settings: KafkaSettings) -> AdminClient:
    """One admin client per cluster for the life of the process, for periodic probes.

    An AdminClient has no close(): it goes when the garbage collector frees
    it, and a probe's exceptions keep it in reference cycles until then. A
    driver restarting its queries would pile up four librdkafka threads and
    their sockets a restart; shared, there is one.
    """
    key = repr(sorted(settings.as_librdkafka_options().items()))
    with _SHARED_LOCK:
        admin = _SHARED_ADMINS.get(key)
        if admin is None:
            admin = _SHARED_ADMINS[key] = kafka_admin(settings)
        return admin


def kafka_producer(settings: KafkaSettings, options: Mapping[str, Any] | None = None) -> Producer:
    """A producer with idempotence on: a retried send never writes a record twice."""
    from confluent_kafka import Producer

    defaults = {"enable.idempotence": True, "linger.ms": 5, "logger": kafka_log}
    return Producer(settings.as_librdkafka_options() | defaults | dict(options or {}))


def kafka_consumer(
    settings: KafkaSettings, group_id: str, options: Mapping[str, Any] | None = None
) -> Consumer:
    """A consumer that sees only committed transactional records, from the earliest offset."""
    from confluent_kafka import Consumer

    defaults = {
        "group.id": group_id,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "logger": kafka_log,
    }
    return Consumer(settings.as_librdkafka_options() | defaults | dict(options or {}))


def elasticsearch(settings: ElasticsearchSettings) -> Elasticsearch:
    return Elasticsearch(**settings.as_client_options())


def check_kafka(settings: KafkaSettings, timeout: float = 5.0) -> int:
    """Number of brokers answering; ``ServiceUnavailableError`` if none do.

    librdkafka reports a refused login or an untrusted certificate through its
    error callback; the metadata request itself only fails with a transport
    error. Both are read to name the setting at fault.
    """
    from confluent_kafka.admin import AdminClient

    seen: list[str] = []
    options: dict[str, Any] = dict(settings.as_librdkafka_options())
    options["error_cb"] = lambda error: seen.append(str(error.str()))
    admin = None
    try:
        admin = AdminClient(options, logger=_check_log)
        metadata = admin.list_topics(timeout=timeout)
    except Exception as exc:
        if admin is not None:
            admin.poll(0.5)  # serves the error callback
        found = [str(exc), *seen]
        if any("certificate verify failed" in text.lower() for text in found):
            raise TlsTrustError("Kafka", settings.bootstrap, "certificate verify failed") from None
        if any("ssl.ca.location failed" in text for text in found):
            raise TlsTrustError("Kafka", settings.bootstrap, "not a PEM CA certificate") from None
        auth = [t for t in found if "authentication" in t.lower() or "sasl" in t.lower()]
        if auth:
            raise CredentialsError("Kafka", settings.bootstrap, auth[0]) from None
        raise ServiceUnavailableError("Kafka", settings.bootstrap, str(exc)) from None
    return len(metadata.brokers)


def check_elasticsearch(settings: ElasticsearchSettings) -> str:
    """The server's version; ``ServiceUnavailableError`` if it does not answer.

    Read from ``GET _nodes/_local``, not ``GET /``: the integ-test-zip
    distributions (8.9 on) do not serve the root endpoint, every distribution
    serves this one.
    """
    try:
        info = elasticsearch_version(elasticsearch(settings))
    except ApiError as exc:
        if exc.meta.status in (401, 403):
            raise CredentialsError(
                "Elasticsearch", settings.url, f"HTTP {exc.meta.status}"
            ) from None
        raise ServiceUnavailableError("Elasticsearch", settings.url, str(exc.message)) from None
    except (ESTransportError, OSError) as exc:
        if "CERTIFICATE_VERIFY_FAILED" in str(exc):
            detail = "certificate verify failed"
            raise TlsTrustError("Elasticsearch", settings.url, detail) from None
        raise ServiceUnavailableError("Elasticsearch", settings.url, type(exc).__name__) from None
    return info


def elasticsearch_version(es: Elasticsearch) -> str:
    """The version of the node ``es`` talks to."""
    nodes = es.nodes.info(node_id="_local", metric="_none", filter_path="nodes.*.version")
    return str(next(iter(nodes["nodes"].values()))["version"])


def spark_jars(settings: Settings) -> list[Path]:
    """What ``spark.jars`` needs: the Kafka connector and Fusion's JVM classes."""
    home = settings.runtime.home
    cache = ArtifactCache(home)
    kafka = cache.spark_kafka_jars()
    return [*kafka, jvm.fusion_jar(home, kafka, cache.java_compiler)]


DAEMON_MODULE = daemon.CONF_KEY


def preloading_daemon(
    conf: dict[str, str], master: str, python: str, submitted: bool
) -> dict[str, str]:
    """``conf`` with Fusion's Python daemon (:mod:`fusion.runtime.daemon`) where it can run.

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
) -> SparkSession:
    """A SparkSession with the Kafka connector on ``spark.jars`` and the configured state store.

    The connector jars are fetched into the Fusion cache on first use; Spark's
    own Ivy resolver is never asked, so no repository beyond Maven's is needed.
    Fusion's own packages reach the executors as a zip (:mod:`fusion.runtime.shipping`).
    Under ``spark-submit`` (``submitted``), master, jars and py-files come from
    its command line instead. ``reserve_memory``: the JVM that runs the tasks
    commits its heap at start (``fusion run``; :mod:`fusion.runtime.memory_limits`).
    """
    from pyspark.sql import SparkSession

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
    # Spark's own log lines go to a file (fusion.runtime.spark_logs), the terminal stays Fusion's.
    app = app_name or settings.spark.app_name
    logs = spark_logs.java_options(settings.spark, settings.runtime.home, app)
    logs_file = spark_logs.log_file(settings.spark, settings.runtime.home, app)
    conf["spark.driver.extraJavaOptions"] = (
        f"{conf.get('spark.driver.extraJavaOptions', '')} {logs}"
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    with spark_logs.stderr_to(None if settings.spark.log_to_console else logs_file):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel(settings.spark.log_level)
    if not submitted:
        session.sparkContext.addPyFile(str(package_zip(settings.runtime.home)))
    return session
