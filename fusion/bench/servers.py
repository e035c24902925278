"""What the soak reads of the servers: the pipeline's outputs, the servers' memory, a restart.

:class:`Outputs` reads the committed ready and enriched topics in a thread
(``read_committed``, as any consumer of the pipeline): how often each key
fired, and when its first enriched record arrived. The servers are the local
runtime's (`fusion infra up`): their memory is read from ``/proc``, and
Elasticsearch is restarted through the runtime. Servers Fusion did not start
are neither measured nor restarted, and the report says so.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Self

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from fusion.core import PipelineConfig
from fusion.core.machine import procfs
from fusion.infra import LocalRuntime
from fusion.kafka import client as kafka_client


class TopicFollower:
    """Reads topics from their beginning in a thread; a subclass notes each keyed record.

    Each keeps, at least, when each key's first enriched record arrived.
    """

    def __init__(self, config: PipelineConfig, topics: list[str], name: str) -> None:
        self.config = config
        self.topics = topics
        self._enriched: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def enriched(self, keys: Iterable[str]) -> dict[str, float]:
        """The (first) enriched record's timestamp of each of ``keys`` that has one."""
        with self._lock:
            return {k: self._enriched[k] for k in keys if k in self._enriched}

    def _read(self) -> None:
        follow(self.config, self.topics, self._lock, self._note, self._stop)

    def _note(self, message: Any) -> None:
        raise NotImplementedError


def follow(
    config: PipelineConfig,
    topics: list[str],
    lock: threading.Lock,
    note: Callable[[Any], None],
    stop: threading.Event,
) -> None:
    """Read ``topics`` from their beginning (committed records) until ``stop``; ``note`` each
    keyed record, under ``lock``."""
    consumer = kafka_client.consumer(config.kafka, f"bench-follow-{uuid.uuid4().hex}")
    listed = consumer.list_topics(timeout=30).topics
    consumer.assign(
        [
            TopicPartition(topic, partition, OFFSET_BEGINNING)
            for topic in topics
            for partition in listed[topic].partitions
        ]
    )
    try:
        while not stop.is_set():
            messages = consumer.consume(num_messages=5_000, timeout=0.5)
            with lock:
                for message in messages:
                    if message.error() is None and message.key() is not None:
                        note(message)
    finally:
        consumer.close()


class Outputs(TopicFollower):
    """The ready topic's fires per key, the enriched topic's first record per key, and the
    incomplete topic's reason per key (what a key never enriched was reported as)."""

    def __init__(self, config: PipelineConfig) -> None:
        topics = [config.ready_topic, config.enriched_topic, config.incomplete_topic]
        super().__init__(config, topics, "soak-outputs")
        self._fires: Counter[str] = Counter()
        self._incomplete: dict[str, str] = {}

    def incomplete(self, keys: Iterable[str]) -> Counter[str]:
        """How many of ``keys`` were reported incomplete, by reason."""
        with self._lock:
            return Counter(self._incomplete[k] for k in keys if k in self._incomplete)

    def duplicate_fires(self) -> int:
        """Keys with more than one ready event on the committed ready topic."""
        with self._lock:
            return sum(1 for count in self._fires.values() if count > 1)

    def _note(self, message: Any) -> None:
        key = message.key().decode()
        if message.topic() == self.config.ready_topic:
            self._fires[key] += 1
        elif message.topic() == self.config.incomplete_topic:
            self._incomplete[key] = str(json.loads(message.value()).get("reason"))
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


def server_pids(config: PipelineConfig) -> dict[str, int]:
    """The local Kafka's and Elasticsearch's process ids by name; none if the servers are
    not the local runtime's."""
    runtime = _local(config)
    if runtime is None:
        return {}
    pids = {service.name: service.process.pid() for service in runtime.services()}
    return {name: pid for name, pid in pids.items() if pid is not None}


def servers_rss_mb(config: PipelineConfig) -> int:
    """Resident memory of the local Kafka and Elasticsearch (every process of each); 0 if
    the servers are not the local runtime's."""
    return sum(
        procfs.rss_mb(p) or 0
        for pid in server_pids(config).values()
        for p in procfs.descendants(pid)
    )


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
