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
3. **enrich**, in the same task: those keys through
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
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from elasticsearch import Elasticsearch

from fusion.core.config import RESERVED_FIELD, PipelineConfig
from fusion.core.errors import ConfigError
from fusion.core.events import ReadyEvent, now_iso
from fusion.core.faults import crash_point
from fusion.elastic import scan
from fusion.elastic.retry import RetryPolicy, call_with_retries
from fusion.enricher.lookups import mget
from fusion.enricher.spec import EnrichSpec, enrich_spec
from fusion.enricher.task import enrich_events
from fusion.observe import names
from fusion.observe.figures import Figures
from fusion.observe.metrics import Metrics
from fusion.spark.checkpoint import CheckpointFiles
from fusion.spark.jvm_writer import fault_settings, task_counts, writer_spec
from fusion.spark.tasks import OUTPUT_SCHEMA, Job, TaskOutput, column, partition_function

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

STAGE = "reconcile"
# What the slices count, besides the enricher's own counts.
SCANNED, COMPLETE, UP_TO_DATE, PLANNED = (
    f"reconcile.{n}" for n in ("scanned", "complete", "up_to_date", "planned")
)


@dataclass
class Report:
    scanned: int = 0  # keys in the scanned index
    complete: int = 0  # with every required source
    up_to_date: int = 0  # complete and already enriched from their current versions
    planned: int = 0  # complete and not enriched from their current versions
    enriched: int = 0
    dead_letters: int = 0
    resumed: bool = False
    slices: int = 0
    slices_skipped: int = 0  # committed by the crashed run this one resumed
    es_retries: int = 0  # Elasticsearch calls retried (an outage, a 429)


Progress = Callable[[Report], None]


def needs_enrichment(
    required: Sequence[str],
    versions: Mapping[str, int],
    enriched_version: int | None,
    deleted: Set[str] = frozenset(),
) -> bool:
    """Every required source is there and the enriched document is missing or older.

    ``deleted``: sources whose document is a deleted row's tombstone; absent, but
    their versions count in the enriched version all the same.
    """
    if any(name not in versions or name in deleted for name in required):
        return False
    return enriched_version is None or enriched_version < sum(versions.values())


def reconcile(
    spark: SparkSession, config: PipelineConfig, progress: Progress | None = None
) -> Report:
    """Plan (or resume) a run, scan and enrich its slices on the executors; the counts."""
    if config.dimensions:
        raise ConfigError(
            "fusion reconcile",
            "",
            f"pipeline {config.name!r} has dimensions ({', '.join(config.dimensions)}), whose "
            "rows reconcile does not look up yet (docs/dimensions.md)",
        )
    if not config.required_sources:
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
    job = Job(STAGE, STAGE, plan["run"], 0, config.pipeline.task_chunk_bytes)
    spec = writer_spec(config, job, fault_settings(spark))
    done = _committed(spark, spec, plan)
    report.slices_skipped = len(done)
    todo = [n for n in range(plan["slices"]) if n not in done]
    if todo:
        work = ScanAndEnrich(enrich_spec(config))
        _add(report, _run_slices(spark, (job, work), spec, plan, todo))
    if progress:
        progress(report)
    # Kept for the record; only plan.json makes the next run resume.
    files.rename("plan.json", "last-plan.json")
    return report


def _slice_task(n: int) -> str:
    return f"slice-{n}"


def _committed(spark: SparkSession, spec: str, plan: Mapping[str, Any]) -> set[int]:
    """The slices whose transaction (with this run's marker) committed.

    Read through the JVM's Kafka client: librdkafka at times returns a
    marker's metadata with stray bytes after it."""
    writer = spark._jvm.fusion.output.TransactionalWriter  # type: ignore[union-attr]
    return {
        n
        for n in range(plan["slices"])
        if writer.committedQuery(spec, _slice_task(n)) == plan["run"]
    }


def _run_slices(
    spark: SparkSession,
    task: tuple[Job, ScanAndEnrich],
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


@dataclass(frozen=True)
class ScanAndEnrich:
    """Task function: scan one slice, enrich what needs it, a page at a time."""

    spec: EnrichSpec

    def __call__(self, job: Job, rows: pa.Table) -> Iterator[TaskOutput]:
        spec = self.spec
        es, retry = spec.es(), spec.retry()
        for n, slices, started_at in zip(
            *(column(rows, name) for name in ("slice", "slices", "started_at")), strict=True
        ):
            task = _slice_task(n)
            retries = Metrics()
            for ids in _pages(es, spec, (n, slices), retry):
                keys, counts = _to_enrich(es, spec, ids, (retry, retries), started_at)
                events = [
                    (_ready(spec, key, started_at), (STAGE, n, i)) for i, key in enumerate(keys)
                ]
                yield TaskOutput(task, (), counts)
                for part in enrich_events(spec, es, events, retry):
                    yield TaskOutput(task, part.records, part.counts)
            yield TaskOutput(task, (), {names.ES_RETRIES: retries.get(names.ES_RETRIES)})


def _to_enrich(
    es: Elasticsearch,
    spec: EnrichSpec,
    ids: list[str],
    retrying: tuple[RetryPolicy, Metrics],
    run_started_at: str,
) -> tuple[list[str], dict[str, int]]:
    """The keys of a page that need enriching, and what the page counted.

    An enriched document this run wrote (its ``fired_at`` is the run's start)
    counts as missing: a crash may have stopped its slice before the slice's
    records were published, and a resumed run redoes such a slice whole.
    """
    # Every source, then the enriched document ("" names it) of each key.
    targets = [(s.index, s.name) for s in spec.sources]
    targets.append((spec.enriched_index, ""))
    fields = {"": [f"{RESERVED_FIELD}.fired_at"]}  # and a source's tombstone mark
    docs = [
        {"_index": index, "_id": key, "_source": fields.get(name, [f"{RESERVED_FIELD}.deleted"])}
        for key in ids
        for index, name in targets
    ]
    crash_point("reconcile.scan")
    hits = call_with_retries(partial(mget, es, docs), "reconcile _mget", *retrying)
    keys: list[str] = []
    counts = dict.fromkeys((SCANNED, COMPLETE, UP_TO_DATE, PLANNED), 0)
    for i, key in enumerate(ids):
        row = hits[i * len(targets) : (i + 1) * len(targets)]
        versions = {
            name: hit["_version"]
            for (_, name), hit in zip(targets, row, strict=True)
            if hit.get("found")
        }
        enriched = versions.pop("", None)
        if _fired_at(row[-1]) == run_started_at:
            enriched = None  # written by this run, maybe never published
        gone = {name for (_, name), hit in zip(targets, row, strict=True) if _tombstone(hit)}
        complete = all(n in versions and n not in gone for n in spec.required)
        counts[SCANNED] += 1
        counts[COMPLETE] += complete
        if needs_enrichment(spec.required, versions, enriched, gone):
            keys.append(key)
            counts[PLANNED] += 1
        elif complete:
            counts[UP_TO_DATE] += 1
    return keys, counts


def _tombstone(hit: Mapping[str, Any]) -> bool:
    own = hit.get("_source", {}).get(RESERVED_FIELD)
    return isinstance(own, dict) and own.get("deleted") is True


def _fired_at(hit: Mapping[str, Any]) -> str | None:
    fired_at = hit.get("_source", {}).get(RESERVED_FIELD, {}).get("fired_at")
    return str(fired_at) if fired_at is not None else None


def _pages(
    es: Elasticsearch, spec: EnrichSpec, part: tuple[int, int], retry: RetryPolicy
) -> Iterator[list[str]]:
    """The ids of one slice of the first required source's index, a page at a time, in key order.

    ``part``: (slice, slices), Elasticsearch's sliced search.
    """
    first = spec.source(spec.required[0])
    for hits in scan.pages(es, first.index, first.sort_field, part, retry):
        yield [hit["_id"] for hit in hits]


def _ready(spec: EnrichSpec, key: str, at: str) -> bytes:
    sources = list(spec.source_names)
    return ReadyEvent(key=key, sources=sources, first_ack_at=at, fired_at=at).to_bytes()


def _load_plan(files: CheckpointFiles) -> dict[str, Any] | None:
    text = files.read_text("plan.json")
    if text is None:
        return None
    plan: dict[str, Any] = json.loads(text)
    return plan if "slices" in plan else None  # a plan of the driver-side reconcile: redo it
