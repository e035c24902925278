"""What the soak reads of the servers: the pipeline's outputs, the servers' memory, a restart.

:class:`Outputs` reads the committed ready and enriched topics in a thread
(``read_committed``, as any consumer of the pipeline): how often each key
fired, and when its first enriched record arrived. The servers are the local
runtime's (`fusion infra up`): their memory is read from ``/proc``, and
Elasticsearch is restarted through the runtime. Servers Fusion did not start
are neither measured nor restarted, and the report says so.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from fusion.core import procfs
from fusion.core.config import PipelineConfig
from fusion.infra.runtime import LocalRuntime
from fusion.kafka import client as kafka_client


class Outputs:
    """The ready topic's fires per key and the enriched topic's first record per key."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self._fires: Counter[str] = Counter()
        self._enriched: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="soak-outputs", daemon=True)

    def __enter__(self) -> Outputs:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def enriched(self, keys: Iterable[str]) -> dict[str, float]:
        """The first enriched record's timestamp of each of ``keys`` that has one."""
        with self._lock:
            return {k: self._enriched[k] for k in keys if k in self._enriched}

    def duplicate_fires(self) -> int:
        """Keys with more than one ready event on the committed ready topic."""
        with self._lock:
            return sum(1 for count in self._fires.values() if count > 1)

    def _read(self) -> None:
        config = self.config
        consumer = kafka_client.consumer(config.kafka, f"bench-soak-{uuid.uuid4().hex}")
        topics = [config.ready_topic, config.enriched_topic]
        listed = consumer.list_topics(timeout=30).topics
        consumer.assign(
            [
                TopicPartition(topic, partition, OFFSET_BEGINNING)
                for topic in topics
                for partition in listed[topic].partitions
            ]
        )
        try:
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=5_000, timeout=0.5)
                with self._lock:
                    for message in messages:
                        if message.error() is None and message.key() is not None:
                            self._note(message)
        finally:
            consumer.close()

    def _note(self, message: Any) -> None:
        key = message.key().decode()
        if message.topic() == self.config.ready_topic:
            self._fires[key] += 1
        else:
            self._enriched.setdefault(key, message.timestamp()[1] / 1000)


def _local(config: PipelineConfig) -> LocalRuntime | None:
    """The local runtime, if it is what serves this pipeline's Elasticsearch."""
    runtime = LocalRuntime.from_settings(config.runtime)
    try:
        served = runtime.endpoints()
    except Exception:
        return None
    same = served.es_url.rstrip("/") == config.elasticsearch.url.rstrip("/")
    return runtime if same and served.kafka_bootstrap == config.kafka.bootstrap else None


def servers_rss_mb(config: PipelineConfig) -> int:
    """Resident memory of the local Kafka and Elasticsearch (every process of each); 0 if
    the servers are not the local runtime's."""
    runtime = _local(config)
    if runtime is None:
        return 0
    total = 0
    for service in runtime.services():
        pid = service.process.pid()
        if pid is not None:
            total += sum(procfs.rss_mb(p) or 0 for p in procfs.descendants(pid))
    return total


def restart_elasticsearch(config: PipelineConfig) -> str:
    """Stop and start the local Elasticsearch; what happened, for the report."""
    runtime = _local(config)
    if runtime is None:
        return "skipped (the servers are not the local runtime's)"
    served = runtime.endpoints()
    runtime.elasticsearch().process.stop()
    kafka_port = int(served.kafka_bootstrap.rsplit(":", 1)[1])
    es_port = int(served.es_url.rsplit(":", 1)[1])
    runtime.up(kafka_port=kafka_port, es_port=es_port)
    return "stopped and started again"
