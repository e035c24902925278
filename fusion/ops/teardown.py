"""What of a pipeline exists, and deleting all of it (topics, indexes, checkpoints, groups)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from fusion.core import PipelineConfig, TopologyError
from fusion.elastic import client as es_client
from fusion.kafka import client as kafka_client
from fusion.kafka import delete_groups, delete_topics
from fusion.spark import CheckpointFiles

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def existing(config: PipelineConfig) -> list[str]:
    """The pipeline's topics, indexes and (local) checkpoint directory that exist now."""
    admin = kafka_client.admin(config.kafka)
    topics = set(admin.list_topics(timeout=15).topics)
    found = [t for t in dict.fromkeys(config.all_topics()) if t in topics]
    es = es_client.connect(config.elasticsearch)
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
    es = es_client.connect(config.elasticsearch)
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
