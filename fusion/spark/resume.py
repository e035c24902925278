"""Where a query starts: its checkpoint, or, when that is lost, where the pipeline left off.

A query without a checkpoint starts from the earliest offsets with an empty
state and a new query id: every key the topics still hold would fire, and be
enriched, again. So before a query starts on an empty checkpoint, Fusion looks
for signs that the pipeline ran before (the query's batch marker in Kafka,
events on the ready topic, documents in the enriched index) and if it finds
any, stops with :class:`~fusion.spark.errors.CheckpointLostError`.

``fusion run --rebuild-state`` is the way on without the checkpoint:

1. each query starts where its last committed batch ended (the input offsets
   committed with its marker, :func:`fusion.kafka.lag.resume_offsets`), not
   at the earliest offsets;
2. the query that keeps the counter's state starts from a state rebuilt from
   Elasticsearch and Kafka (:mod:`fusion.counter.rebuild`): keys that fired
   stay fired, so only what never fired fires;
3. a file in the new checkpoint says the state was rebuilt: should the run
   stop before its first batch committed, the next run rebuilds again
   (instead of replaying that batch on an empty state).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fusion.core import ConfigError, PipelineConfig, now_iso
from fusion.elastic import client as es_client
from fusion.kafka import lag
from fusion.spark.checkpoint import (
    CheckpointFiles,
    ReadableFiles,
    committed_batches,
    on_this_disk,
    planned_batches,
)
from fusion.spark.errors import CheckpointLostError
from fusion.topology import ENRICHER, topology_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REBUILD_FILE = "fusion-rebuilt-state"


def check_on_disk(config: PipelineConfig, queries: list[str]) -> bool:
    """:func:`check`, before Spark starts, where every checkpoint is on this machine's disk;
    whether it ran.

    A lost checkpoint is then refused in about a second, not after a JVM
    started; checkpoints in any other store are left to :func:`check` once Spark runs.
    """
    found = [on_this_disk(config.checkpoint(query)) for query in queries]
    local = [files for files in found if files is not None]
    if len(local) < len(queries):
        return False
    _check(local, config, queries)
    return True


def check(spark: SparkSession, config: PipelineConfig, queries: list[str]) -> None:
    """Stop if any of ``queries`` would start on an empty checkpoint of a pipeline that ran.

    With ``--rebuild-state`` on a checkpoint that holds state, stop too: there
    is nothing to rebuild, and rebuilding would throw that state away.
    """
    _check([CheckpointFiles(spark, config.checkpoint(q)) for q in queries], config, queries)


def _check(
    checkpoints: Sequence[ReadableFiles], config: PipelineConfig, queries: list[str]
) -> None:
    signs: list[str] = []
    lost: list[str] = []
    for query, files in zip(queries, checkpoints, strict=True):
        if _fresh(files):
            found = evidence(config, query)
            signs += [sign for sign in found if sign not in signs]
            lost += [query] * bool(found)
        elif config.pipeline.rebuild_state and not _rebuild_pending(files):
            raise ConfigError(
                "--rebuild-state",
                "",
                f"the checkpoint {files.uri} holds the query's state: it is not lost, so "
                "there is nothing to rebuild; run without --rebuild-state",
            )
    if signs and not config.pipeline.rebuild_state:
        where = config.checkpoint(lost[0]) if len(lost) == 1 else config.checkpoint_dir
        raise CheckpointLostError(config.name, where, signs)


def rebuilding(spark: SparkSession, config: PipelineConfig, query: str) -> bool:
    """Whether ``query`` starts from rebuilt state (and where its marker left its input)."""
    files = CheckpointFiles(spark, config.checkpoint(query))
    if _fresh(files) and config.pipeline.rebuild_state:
        files.write_text(REBUILD_FILE, f"state rebuilt from Elasticsearch and Kafka, {now_iso()}\n")
        return True
    return _rebuild_pending(files)


def starting(
    spark: SparkSession, config: PipelineConfig, query: str, topics: list[str]
) -> str | None:
    """``startingOffsets`` of a rebuilt ``query``: where its last committed batch ended."""
    if not rebuilding(spark, config, query):
        return None
    return lag.resume_offsets(config, {query: topics}, topics)


def evidence(config: PipelineConfig, query: str) -> list[str]:
    """What says the pipeline ran ``query`` before: its marker, or its events and documents.

    The query's batch marker says it alone; Kafka deletes a marker
    ``offsets.retention.minutes`` after its last commit, so for the queries
    that fire or enrich keys, records on the ready topic together with
    documents in the enriched index say it too (either alone may be another
    writer's: a test's events, a reindex).
    """
    reads = topology_of(config).inputs()[query]
    marker, _ = lag.stage_markers(config, {query: reads})[query]
    if marker is not None:
        where = config.markers_topic
        return [f"batch {marker.batch} of its {query} query committed ({where})"]
    if query not in (topology_of(config).counter_query, ENRICHER):
        return []
    events = _records(config, config.ready_topic)
    es = es_client.connect(config.elasticsearch)
    found = es.options(ignore_status=(404, 503)).count(index=config.enriched_index)
    documents = int(found.get("count") or 0)
    if not events or not documents:
        return []
    return [
        f"{events:,} records on {config.ready_topic}",
        f"{documents:,} documents in {config.enriched_index}",
    ]


def _fresh(files: ReadableFiles) -> bool:
    return not planned_batches(files) and not committed_batches(files)


def _rebuild_pending(files: ReadableFiles) -> bool:
    """A rebuilt run stopped before its first batch committed: rebuild again."""
    return files.exists(REBUILD_FILE) and not committed_batches(files)


def _records(config: PipelineConfig, topic: str) -> int:
    """Offsets ``topic`` holds (records and transaction markers); 0 if it does not exist."""
    return sum(max(0, high - low) for low, high in lag.watermarks(config, topic).values())
