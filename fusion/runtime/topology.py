"""Create the pipeline's topics and indexes if they are missing (mappings from the hints)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic
from elasticsearch import BadRequestError, Elasticsearch

from fusion.core.config import PipelineConfig
from fusion.core.errors import ServiceUnavailableError
from fusion.runtime import clients
from fusion.runtime.checkpoint import CheckpointFiles
from fusion.runtime.errors import TopologyError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def ensure_topics(config: PipelineConfig) -> list[str]:
    """Create every missing topic; return the ones created."""
    admin = clients.kafka_admin(config.kafka)
    try:
        existing = set(admin.list_topics(timeout=15).topics)
    except KafkaException as exc:
        raise ServiceUnavailableError("Kafka", config.kafka.bootstrap, str(exc.args[0])) from None
    wanted = [t for t in dict.fromkeys(config.all_topics()) if t not in existing]
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
    return wanted


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


def index_meta(config: PipelineConfig) -> dict[str, str]:
    """The ``_meta`` of the indexes Fusion creates: which pipeline owns them."""
    return {"fusion_pipeline": config.name}


def source_mapping(config: PipelineConfig, fields: dict[str, str]) -> dict[str, Any]:
    properties: dict[str, Any] = {config.key_field: {"type": "keyword"}}
    properties.update({name: {"type": kind} for name, kind in fields.items()})
    return {"dynamic": True, "properties": properties, "_meta": index_meta(config)}


def enriched_mapping(config: PipelineConfig) -> dict[str, Any]:
    properties: dict[str, Any] = {
        config.key_field: {"type": "keyword"},
        "fusion": {
            "properties": {
                "fired_at": {"type": "date"},
                "enriched_at": {"type": "date"},
                "versions": {"type": "object"},
            }
        },
    }
    for source in config.sources:
        nested = source_mapping(config, dict(source.fields))["properties"]
        properties[source.name] = {"type": "object", "properties": nested}
    return {"dynamic": True, "properties": properties, "_meta": index_meta(config)}


def ensure_indexes(es: Elasticsearch, config: PipelineConfig) -> list[str]:
    """Create every missing index with its mapping; return the ones created.

    An existing index that this pipeline created (its mapping's ``_meta``
    says so) gets the pipeline's refresh interval if it has another, so a
    changed ``refresh_interval`` takes effect at the next start; an index
    someone else made keeps its own.
    """
    wanted = {config.index_of(s): source_mapping(config, dict(s.fields)) for s in config.sources}
    wanted[config.enriched_index] = enriched_mapping(config)
    created = []
    for index, mapping in wanted.items():
        refresh = refresh_interval(config, index)
        settings = {"index": {"refresh_interval": refresh}}
        if es.indices.exists(index=index):
            _update_refresh(es, config, index, refresh)
            continue
        try:
            es.indices.create(index=index, mappings=mapping, settings=settings)
        except BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise TopologyError(f"index {index}", str(exc.message)) from None
        created.append(index)
    return created


def refresh_interval(config: PipelineConfig, index: str) -> str:
    """The refresh interval the pipeline wants on one of its indexes."""
    if index == config.enriched_index:
        return config.pipeline.enriched_refresh_interval
    return config.pipeline.refresh_interval


def _update_refresh(es: Elasticsearch, config: PipelineConfig, index: str, refresh: str) -> None:
    mapping: dict[str, Any] = dict(es.indices.get_mapping(index=index))
    found_mapping: dict[str, Any] = next(iter(mapping.values()), {})
    meta = found_mapping.get("mappings", {}).get("_meta", {})
    if meta.get("fusion_pipeline") != config.name:
        return
    found = dict(es.indices.get_settings(index=index, name="index.refresh_interval"))
    settings: dict[str, Any] = next(iter(found.values()), {})
    current = settings.get("settings", {}).get("index", {}).get("refresh_interval")
    if current != refresh:
        es.indices.put_settings(index=index, settings={"index": {"refresh_interval": refresh}})


def existing(config: PipelineConfig) -> list[str]:
    """The pipeline's topics, indexes and (local) checkpoint directory that exist now."""
    admin = clients.kafka_admin(config.kafka)
    topics = set(admin.list_topics(timeout=15).topics)
    found = [t for t in dict.fromkeys(config.all_topics()) if t in topics]
    es = clients.elasticsearch(config.elasticsearch)
    found += [index for index in config.all_indexes() if es.indices.exists(index=index)]
    uri = config.checkpoint_dir
    if uri.startswith("file:") and Path(urlparse(uri).path).exists():
        found.append(urlparse(uri).path)
    return found


def delete_all(config: PipelineConfig, spark: SparkSession | None = None) -> None:
    """Delete the pipeline's topics, indexes and checkpoints (the demo starts afresh).

    A checkpoint outside the local file system is deleted through ``spark``'s
    Hadoop file system; without a session only a ``file://`` one can be.
    """
    delete_topics(config, config.all_topics())
    es = clients.elasticsearch(config.elasticsearch)
    es.options(ignore_status=404).indices.delete(index=",".join(config.all_indexes()))
    delete_checkpoints(config, spark)
    delete_groups(config)


def delete_checkpoints(config: PipelineConfig, spark: SparkSession | None = None) -> None:
    uri = config.checkpoint_dir
    if spark is not None:
        CheckpointFiles(spark, uri).delete()
    elif uri.startswith("file:"):
        shutil.rmtree(urlparse(uri).path, ignore_errors=True)
    else:
        raise TopologyError(f"checkpoints at {uri}", "deleting them needs a Spark session")


def delete_groups(config: PipelineConfig) -> None:
    """Forget the pipeline's markers (consumer groups named ``fusion-<pipeline>-...``)."""
    admin = clients.kafka_admin(config.kafka)
    prefix = f"fusion-{config.name}-"
    listed = admin.list_consumer_groups(request_timeout=15).result()
    groups = [g.group_id for g in listed.valid if g.group_id.startswith(prefix)]
    if groups:
        for future in admin.delete_consumer_groups(groups, request_timeout=15).values():
            future.result()


def delete_topics(config: PipelineConfig, topics: list[str]) -> None:
    """Delete ``topics`` (those that exist) and wait until the broker no longer lists them."""
    admin = clients.kafka_admin(config.kafka)
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
