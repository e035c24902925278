"""`fusion reconcile`: enrich the keys that are complete in Elasticsearch but not enriched.

The pipeline learns of a searchable document only through its ack. When acks
are lost (Kafka retention deleted them while the pipeline was down, the ack
topic was recreated) or a key was forgotten (its state TTL ran out before a
late update), Elasticsearch still holds the truth. Reconcile reads it:

1. **scan**: a point-in-time + ``search_after`` walk over the first required
   source's index (ids only), and per page one ``_mget`` (no ``_source``) for
   every source and the enriched document. A key needs enriching when every
   required source is there and its enriched document is missing or older than
   its sources (the enriched version is the sum of the source versions);
2. **plan**: the keys are written to ``<checkpoint_dir>/reconcile/plan.json``
   with a fresh run id before anything is enriched (``last-plan.json`` once done);
3. **enrich**: the plan in chunks through :func:`~fusion.enricher.task.enrich_events`,
   the enricher's own code path, each chunk one transaction of reconcile's own
   transactional output (:mod:`fusion.runtime.exactly_once`) with chunk number = batch id. A
   crashed run resumes its plan: chunks whose transaction committed are
   skipped before anything is looked up or written, the rest are redone
   (Elasticsearch rewrites the same version), so each key reaches the enriched
   topic once.

Every Elasticsearch call is retried through an outage like the stages' own
(:mod:`fusion.runtime.retry`). The plan lives in the checkpoint directory, read and
written through Spark's Hadoop file system (:mod:`fusion.runtime.checkpoint`). The
Elasticsearch client does the work itself, faster here than a Spark job: the
scan moves ids only.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from elasticsearch import Elasticsearch, NotFoundError

from fusion.core.config import PipelineConfig
from fusion.core.events import ReadyEvent, now_iso
from fusion.enricher.lookups import mget
from fusion.enricher.task import collected, enrich_events
from fusion.runtime import clients
from fusion.runtime.checkpoint import CheckpointFiles
from fusion.runtime.exactly_once import TransactionalOutput
from fusion.runtime.faults import crash_point
from fusion.runtime.figures import Figures
from fusion.runtime.metrics import Metrics
from fusion.runtime.retry import RetryPolicy, call_with_retries

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

STAGE = "reconcile"
PAGE = 1_000
KEEP_ALIVE = "5m"


@dataclass
class Report:
    scanned: int = 0  # keys in the scanned index
    complete: int = 0  # with every required source
    up_to_date: int = 0  # complete and already enriched from their current versions
    planned: int = 0
    enriched: int = 0
    dead_letters: int = 0
    resumed: bool = False
    chunks_skipped: int = 0  # committed by the crashed run this one resumed
    es_retries: int = 0  # Elasticsearch calls retried (an outage, a 429)


Progress = Callable[[Report], None]


def needs_enrichment(
    required: Sequence[str], versions: Mapping[str, int], enriched_version: int | None
) -> bool:
    """Every required source is there and the enriched document is missing or older."""
    if any(name not in versions for name in required):
        return False
    return enriched_version is None or enriched_version < sum(versions.values())


def reconcile(
    spark: SparkSession, config: PipelineConfig, progress: Progress | None = None
) -> Report:
    report = Report()
    files = CheckpointFiles(spark, config.checkpoint(STAGE))
    retry = RetryPolicy(budget_seconds=config.pipeline.retry_budget_seconds)
    es = clients.elasticsearch(config.elasticsearch)
    plan = _load_plan(files)
    if plan is None:
        keys = list(_scan(es, config, retry, report, progress))
        if not keys:
            return report
        plan = {"run": uuid.uuid4().hex, "started_at": now_iso(), "keys": keys}
        files.write_text("plan.json", json.dumps(plan))
    else:
        report.resumed = True
    report.planned = len(plan["keys"])
    _enrich(config, es, retry, plan, report, progress)
    # Kept for the record; only plan.json makes the next run resume.
    files.rename("plan.json", "last-plan.json")
    return report


def _scan(
    es: Elasticsearch,
    config: PipelineConfig,
    retry: RetryPolicy,
    report: Report,
    progress: Progress | None,
) -> Iterator[str]:
    retries = Metrics()
    first = config.source(config.required_sources[0])
    # Every source, then the enriched document ("" names it) of each key.
    targets = [(config.index_of(s), s.name) for s in config.sources]
    targets.append((config.enriched_index, ""))
    for ids in _pages(es, config.index_of(first), config.key_field, retry):
        docs = [
            {"_index": index, "_id": key, "_source": False} for key in ids for index, _ in targets
        ]
        crash_point("reconcile.scan")
        hits = call_with_retries(partial(mget, es, docs), "reconcile _mget", retry, retries)
        report.es_retries = retries.get("es.retries")
        for i, key in enumerate(ids):
            row = hits[i * len(targets) : (i + 1) * len(targets)]
            versions = {
                name: hit["_version"]
                for (_, name), hit in zip(targets, row, strict=True)
                if hit.get("found")
            }
            enriched = versions.pop("", None)
            report.scanned += 1
            complete = all(n in versions for n in config.required_sources)
            report.complete += complete
            if needs_enrichment(config.required_sources, versions, enriched):
                yield key
            elif complete:
                report.up_to_date += 1
        if progress:
            progress(report)


def _pages(
    es: Elasticsearch, index: str, key_field: str, retry: RetryPolicy
) -> Iterator[list[str]]:
    """The ids of every document of ``index``, a page at a time, in key order.

    Pages come from a point in time, sorted on the join key (a keyword with
    doc values), so that when the point in time is lost (Elasticsearch
    restarted during the scan) a new one continues after the last key seen.
    """
    after: list[Any] | None = None
    while True:
        opened = partial(es.open_point_in_time, index=index, keep_alive=KEEP_ALIVE)
        pit = call_with_retries(opened, "open a point in time", retry)["id"]
        try:
            while True:
                search = partial(
                    es.search,
                    pit={"id": pit, "keep_alive": KEEP_ALIVE},
                    size=PAGE,
                    sort=[{key_field: "asc"}],
                    source=False,
                    search_after=after,
                    track_total_hits=False,
                )
                response = call_with_retries(search, "reconcile search", retry)
                pit = response.get("pit_id", pit)
                hits = response["hits"]["hits"]
                if not hits:
                    return
                after = hits[-1]["sort"]
                yield [hit["_id"] for hit in hits]
        except NotFoundError:
            continue  # the point in time is gone: a new one, after the last key seen
        finally:
            with contextlib.suppress(Exception):  # it expires by itself if this fails
                es.options(ignore_status=404).close_point_in_time(id=pit)


def _enrich(
    config: PipelineConfig,
    es: Elasticsearch,
    retry: RetryPolicy,
    plan: dict[str, Any],
    report: Report,
    progress: Progress | None,
) -> None:
    output = TransactionalOutput(
        config.kafka,
        f"fusion-{config.name}-{STAGE}",
        config.markers_topic,
        config.pipeline.retry_budget_seconds,
        STAGE,
    )
    keys: list[str] = plan["keys"]
    size = max(1, config.pipeline.mget_chunk // len(config.sources))
    for batch_id, start in enumerate(range(0, len(keys), size)):
        if output.committed(plan["run"], batch_id) is not None:
            report.chunks_skipped += 1
            continue  # written and published by the run this one resumes
        events = [
            (_ready(config, key, plan["started_at"]), (STAGE, 0, start + i))
            for i, key in enumerate(keys[start : start + size])
        ]
        result = collected(enrich_events(config, es, events, retry))
        output.publish(plan["run"], batch_id, result.records, result.counts)
        figures = Figures(result.counts)
        report.enriched += figures.enriched
        report.dead_letters += figures.enricher_dead_letters
        if progress:
            progress(report)
    output.close()


def _ready(config: PipelineConfig, key: str, at: str) -> bytes:
    sources = list(config.source_names)
    return ReadyEvent(key=key, sources=sources, first_ack_at=at, fired_at=at).to_bytes()


def _load_plan(files: CheckpointFiles) -> dict[str, Any] | None:
    text = files.read_text("plan.json")
    return json.loads(text) if text is not None else None
