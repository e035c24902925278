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
from collections import Counter
from collections.abc import Iterable
from typing import Any

from fusion.bench.hops import TopicFollower
from fusion.core import PipelineConfig
from fusion.core.machine import procfs
from fusion.infra import LocalRuntime


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
