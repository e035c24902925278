"""`fusion reconcile`: enrich the keys that are complete in Elasticsearch but not enriched.

The pipeline learns of a searchable document only through its ack. When acks
are lost (Kafka retention deleted them while the pipeline was down, the ack
topic was recreated) or a key was forgotten (its state TTL ran out before a
late update), Elasticsearch still holds the truth. Reconcile reads it, on the
executors: the driver plans and adds up counts, as the stages' drivers do.

1. **plan**: a run id and a number of slices, written to
   ``<checkpoint_dir>/reconcile/plan.json`` before anything is enriched
   (``last-plan.json`` once done);
2. **scan**, a Spark task per slice: a sliced point-in-time +
   ``search_after`` walk over the first required source's index (ids only),
   and per page one ``_mget`` (no ``_source``) for every source and the
   enriched document. A key needs enriching when every required source is
   there and its enriched document is missing or older than its sources (the
   enriched version is the sum of the source versions);
3. **enrich**, in the same task (with dimensions, the counter is asked
   instead, :mod:`fusion.ops.reconcile_ask`): those keys through
   :func:`~fusion.enricher.task.enrich_events`, the enricher's own code path;
   the executor's JVM publishes the slice's enriched records in one
   transaction with the run's marker (``fusion.output.TransactionalWriter``).
   A crashed run resumes its plan: slices whose transaction committed are
   skipped before anything is looked up or written, the rest are redone
   (Elasticsearch rewrites the same version), so each key reaches the enriched
   topic once.

Every Elasticsearch call is retried through an outage like the stages' own
(:mod:`fusion.elastic.retry`). The plan lives in the checkpoint directory, read and
written through Spark's Hadoop file system (:mod:`fusion.spark.checkpoint`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fusion.core import ConfigError, PipelineConfig, now_iso
from fusion.enricher import enrich_spec
from fusion.observe import Figures
from fusion.ops.reconcile_ask import AskSpec, ScanAndAsk
from fusion.ops.reconcile_slice import (
    COMPLETE,
    PLANNED,
    SCANNED,
    STAGE,
    UP_TO_DATE,
    ScanAndEnrich,
    slice_task,
)
from fusion.spark import (
    OUTPUT_SCHEMA,
    CheckpointFiles,
    Job,
    fault_settings,
    partition_function,
    task_counts,
    writer_spec,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


Work = ScanAndEnrich | ScanAndAsk


@dataclass
class Report:
    scanned: int = 0  # keys in the scanned index
    complete: int = 0  # with every required source
    up_to_date: int = 0  # complete and already enriched from their current versions
    planned: int = 0  # complete and not enriched from their current versions
    enriched: int = 0  # (with dimensions, the planned keys are asked of the counter instead)
    dead_letters: int = 0
    resumed: bool = False
    slices: int = 0
    slices_skipped: int = 0  # committed by the crashed run this one resumed
    es_retries: int = 0  # Elasticsearch calls retried (an outage, a 429)
    asked: bool = False  # the planned keys were asked of the counter (a pipeline with slots)


Progress = Callable[[Report], None]


def reconcile(
    spark: SparkSession, config: PipelineConfig, progress: Progress | None = None
) -> Report:
    """Plan (or resume) a run, scan and enrich its slices on the executors; the counts."""
    if not config.required_parts:
        raise ConfigError(
            "fusion reconcile",
            "",
            f"it walks the first required source's index, and pipeline {config.name!r} has "
            "none: mark the source every key has `required = true`",
        )
    report = Report()
    files = CheckpointFiles(spark, config.checkpoint(STAGE))
    plan = _load_plan(files)
    if plan is None:
        slices = max(1, spark.sparkContext.defaultParallelism)
        plan = {"run": uuid.uuid4().hex, "started_at": now_iso(), "slices": slices}
        files.write_text("plan.json", json.dumps(plan))
    else:
        report.resumed = True
    report.slices = plan["slices"]
    report.asked = bool(config.slots)
    job = Job(STAGE, STAGE, plan["run"], 0, config.pipeline.task_chunk_bytes)
    spec = writer_spec(config, job, fault_settings(spark))
    done = _committed(spark, spec, plan)
    report.slices_skipped = len(done)
    todo = [n for n in range(plan["slices"]) if n not in done]
    if todo:
        # With dimensions the counter is asked (fusion/ops/reconcile_ask.py).
        work: Work = (
            ScanAndAsk(AskSpec.of(config)) if config.slots else ScanAndEnrich(enrich_spec(config))
        )
        _add(report, _run_slices(spark, (job, work), spec, plan, todo))
    if progress:
        progress(report)
    # Kept for the record; only plan.json makes the next run resume.
    files.rename("plan.json", "last-plan.json")
    return report


def _committed(spark: SparkSession, spec: str, plan: Mapping[str, Any]) -> set[int]:
    """The slices whose transaction (with this run's marker) committed.

    Read through the JVM's Kafka client: librdkafka at times returns a
    marker's metadata with stray bytes after it."""
    writer = spark._jvm.fusion.output.TransactionalWriter  # type: ignore[union-attr]
    return {
        n
        for n in range(plan["slices"])
        if writer.committedQuery(spec, slice_task(n)) == plan["run"]
    }


def _run_slices(
    spark: SparkSession,
    task: tuple[Job, Work],
    spec: str,
    plan: Mapping[str, Any],
    todo: list[int],
) -> dict[str, int]:
    """A Spark task per slice (one slice per partition); the tasks' counts added up."""
    rows = [(n, plan["slices"], plan["started_at"]) for n in todo]
    slices = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, len(rows)), "slice INT, slices INT, started_at STRING"
    )
    output = slices.mapInArrow(partition_function(*task), OUTPUT_SCHEMA)
    writer = spark._jvm.fusion.output.TransactionalWriter  # type: ignore[union-attr]
    counts: dict[str, int] = {}
    for row in task_counts(writer.publish(output._jdf, spec)):
        counts[row.name] = counts.get(row.name, 0) + row.value
    return counts


def _add(report: Report, counts: Mapping[str, int]) -> None:
    report.scanned += counts.get(SCANNED, 0)
    report.complete += counts.get(COMPLETE, 0)
    report.up_to_date += counts.get(UP_TO_DATE, 0)
    report.planned += counts.get(PLANNED, 0)
    figures = Figures(counts)
    report.enriched += figures.enriched
    report.dead_letters += figures.enricher_dead_letters
    report.es_retries += figures.es_retries


def _load_plan(files: CheckpointFiles) -> dict[str, Any] | None:
    text = files.read_text("plan.json")
    if text is None:
        return None
    plan: dict[str, Any] = json.loads(text)
    return plan if "slices" in plan else None  # a plan of the driver-side reconcile: redo it
