"""The spec the JVM's ``fusion.output.TransactionalWriter`` gets, and its answer as counts."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from fusion.core import PipelineConfig, faults
from fusion.spark import tasks

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def task_counts(rows: str) -> list[tasks.TaskCount]:
    """The writer's answer (JSON rows ``[name, value, executor]``) as count rows."""
    return [
        tasks.TaskCount(name, int(value), executor) for name, value, executor in json.loads(rows)
    ]


def writer_spec(config: PipelineConfig, job: tasks.Job, faults: Mapping[str, str]) -> str:
    """What ``fusion.output.TransactionalWriter`` needs to publish a stage's batch."""
    kafka = {
        name.removeprefix("kafka."): value
        for name, value in config.kafka.as_spark_options().items()
        if name.startswith("kafka.")
    }
    # The producer refuses a record larger than this before the broker sees it.
    kafka["max.request.size"] = str(config.topic_message_bytes)
    return json.dumps(
        {
            "kafka": kafka,
            "transactional_prefix": f"fusion-{config.name}-{job.stage}",
            "markers_topic": config.markers_topic,
            "query": job.query,
            "batch": job.batch_id,
            "budget_ms": int(config.pipeline.retry_budget_seconds * 1000),
            "crash_prefix": job.crash_prefix,
            "faults": dict(faults),
            "spool_bytes": config.pipeline.task_chunk_bytes,
        }
    )


def fault_settings(spark: SparkSession) -> dict[str, str]:
    """The fault injection the tests ask for (:mod:`fusion.core.faults`), for JVM tasks too.

    A test sets it for the Python workers (``SparkContext.environment``) or for
    the whole process; Python tasks read their environment, JVM tasks get it here.
    """
    environment = spark.sparkContext.environment
    return {
        name: environment.get(name) or os.environ.get(name, "")
        for name in faults.ENV_NAMES
        if environment.get(name) or os.environ.get(name)
    }
