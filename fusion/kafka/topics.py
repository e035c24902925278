"""Create the pipeline's topics if they are missing; delete topics and the pipeline's groups."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic

from fusion.core import ConfigError, PipelineConfig, ServiceUnavailableError, TopologyError
from fusion.kafka import client as kafka_client
from fusion.kafka.markers import largest_marker

if TYPE_CHECKING:
    pass


def ensure_topics(config: PipelineConfig) -> list[str]:
    """Create every missing topic; return the ones created."""
    admin = kafka_client.admin(config.kafka)
    try:
        existing = set(admin.list_topics(timeout=15).topics)
    except KafkaException as exc:
        raise ServiceUnavailableError("Kafka", config.kafka.bootstrap, str(exc.args[0])) from None
    wanted = [t for t in dict.fromkeys(config.all_topics()) if t not in existing]
    _check_marker_room(admin, config)
    _raise_message_size(admin, config, [t for t in config.output_topics() if t in existing])
    if not wanted:
        return []
    # replication_factor -1: the broker's default, right for one node and for a cluster.
    futures = admin.create_topics([_new_topic(config, t) for t in wanted], operation_timeout=30)
    for topic, future in futures.items():
        try:
            future.result(timeout=60)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopologyError(f"topic {topic}", str(exc.args[0])) from None
        except TimeoutError:
            detail = "the broker did not answer in 60 s; is it overloaded or still starting?"
            raise TopologyError(f"topic {topic}", detail) from None
    _wait_listed(admin, wanted)
    return wanted


def _wait_listed(admin: Any, topics: list[str], timeout: float = 30.0) -> None:
    """Return once the broker lists every one of ``topics``.

    The controller confirms a new topic before the brokers' metadata holds it:
    a client that asks right after (the demo's look for an earlier pipeline,
    Spark's first read) could find none of them.
    """
    deadline = time.monotonic() + timeout
    while True:
        listed = set(admin.list_topics(timeout=15).topics)
        missing = [t for t in topics if t not in listed]
        if not missing:
            return
        if time.monotonic() > deadline:
            detail = f"created, but the broker did not list it within {timeout:g} s"
            raise TopologyError(f"topic {missing[0]}", detail)
        time.sleep(0.1)


def _new_topic(config: PipelineConfig, topic: str) -> NewTopic:
    if topic == config.markers_topic:
        # One small record per query, read in full on every start: compact it.
        return NewTopic(topic, 1, -1, config={"cleanup.policy": "compact"})
    if topic == config.clock_topic:
        # A tick now and then, read once: an hour of them is plenty.
        return NewTopic(topic, 1, -1, config={"retention.ms": str(3_600_000)})
    options = {}
    if topic in config.output_topics():
        options["max.message.bytes"] = str(config.topic_message_bytes)
    return NewTopic(topic, config.pipeline.topic_partitions, -1, config=options)


DEFAULT_METADATA_BYTES = 4096  # Kafka's offset.metadata.max.bytes


def _check_marker_room(admin: Any, config: PipelineConfig) -> None:
    """Stop at start if a batch marker of this pipeline may not fit the brokers' limit.

    A marker is consumer-group offset metadata, which every broker caps at
    ``offset.metadata.max.bytes``: a marker over it would have each batch's
    commit refused. Brokers whose setting cannot be read count with Kafka's default.
    """
    needed = largest_marker(config)
    if needed <= DEFAULT_METADATA_BYTES:
        return
    brokers = list(admin.list_topics(timeout=15).brokers)
    resources = [ConfigResource(ResourceType.BROKER, str(broker)) for broker in brokers]
    limits = []
    for future in admin.describe_configs(resources, request_timeout=30).values():
        try:
            entry = future.result(timeout=60).get("offset.metadata.max.bytes")
        except KafkaException:
            entry = None
        limits.append(int(entry.value) if entry is not None else DEFAULT_METADATA_BYTES)
    limit = min(limits, default=DEFAULT_METADATA_BYTES)
    if needed > limit:
        raise ConfigError(
            "offset.metadata.max.bytes",
            str(limit),
            f"a batch marker of this pipeline ({len(config.sources)} sources, "
            f"{config.pipeline.topic_partitions} partitions each) can take up to {needed} bytes "
            f"of offset metadata, over the brokers' limit of {limit}: set "
            f"offset.metadata.max.bytes={needed * 2} on every broker (a broker setting), or "
            "split the pipeline into pipelines of fewer sources",
        )


def _raise_message_size(admin: Any, config: PipelineConfig, topics: list[str]) -> None:
    """Let the output topics that exist take a record as large as Fusion may write.

    Topics an older Fusion created have the broker's default (1 MB), less than
    an enriched document of N records of up to ``max_record_bytes``. A topic
    that cannot be changed (no ``AlterConfigs`` right) stops the start here,
    not the first large record later.
    """
    if not topics:
        return
    wanted = config.topic_message_bytes
    resources = [ConfigResource(ResourceType.TOPIC, topic) for topic in topics]
    small = []
    for resource, future in admin.describe_configs(resources, request_timeout=30).items():
        try:
            entries = future.result(timeout=60)
        except KafkaException as exc:
            raise TopologyError(f"topic {resource.name}", str(exc.args[0])) from None
        entry = entries.get("max.message.bytes")
        if entry is not None and int(entry.value) < wanted:
            small.append(resource.name)
    if not small:
        return
    size = ConfigEntry(
        "max.message.bytes", str(wanted), incremental_operation=AlterConfigOpType.SET
    )
    changes = [ConfigResource(ResourceType.TOPIC, t, incremental_configs=[size]) for t in small]
    for resource, future in admin.incremental_alter_configs(changes, request_timeout=30).items():
        try:
            future.result(timeout=60)
        except KafkaException as exc:
            raise TopologyError(
                f"topic {resource.name}",
                f"its max.message.bytes is below the {wanted} bytes Fusion may write to it "
                f"(N+1 records of max_record_bytes) and could not be raised ({exc.args[0]}); "
                f"set max.message.bytes={wanted} on it, or lower [pipeline] max_record_bytes",
            ) from None


def delete_groups(config: PipelineConfig) -> None:
    """Forget the pipeline's markers (consumer groups named ``fusion-<pipeline>-...``)."""
    admin = kafka_client.admin(config.kafka)
    prefix = f"fusion-{config.name}-"
    listed = admin.list_consumer_groups(request_timeout=15).result()
    groups = [g.group_id for g in listed.valid if g.group_id.startswith(prefix)]
    if groups:
        for future in admin.delete_consumer_groups(groups, request_timeout=15).values():
            future.result()


def delete_topics(config: PipelineConfig, topics: list[str]) -> None:
    """Delete ``topics`` (those that exist) and wait until the broker no longer lists them."""
    admin = kafka_client.admin(config.kafka)
    existing = set(admin.list_topics(timeout=15).topics)
    doomed = [t for t in dict.fromkeys(topics) if t in existing]
    if doomed:
        for future in admin.delete_topics(doomed, operation_timeout=30).values():
            future.result(timeout=60)
        # Deletion is asynchronous: wait until the broker no longer lists them.
        deadline = time.monotonic() + 60
        while set(doomed) & set(admin.list_topics(timeout=15).topics):
            if time.monotonic() > deadline:
                raise TopologyError("fresh topics", f"{doomed} are still being deleted")
            time.sleep(0.2)
