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
3. **enrich**: the plan in chunks through :class:`~fusion.enricher_query.EnrichBatch`,
   the enricher's own code path, with chunk number = batch id and the run's
   own transactional id. A crashed run resumes its plan: chunks whose Kafka
   transaction committed are skipped, the rest are redone (Elasticsearch
   rewrites the same version), so each key reaches the enriched topic once.

The Elasticsearch client is faster here than a Spark batch job: the scan moves
ids only and needs no cluster start-up.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from fusion import clients
from fusion.config import PipelineConfig
from fusion.enricher_query import EnrichBatch
from fusion.events import ReadyEvent, now_iso
from fusion.metrics import Metrics

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


Progress = Callable[[Report], None]


def needs_enrichment(
    required: Sequence[str], versions: Mapping[str, int], enriched_version: int | None
) -> bool:
    """Every required source is there and the enriched document is missing or older."""
    if any(name not in versions for name in required):
        return False
    return enriched_version is None or enriched_version < sum(versions.values())


def reconcile(config: PipelineConfig, progress: Progress | None = None) -> Report:
    report = Report()
    home = config.checkpoint_dir / STAGE
    plan = _load_plan(home)
    if plan is None:
        es = clients.elasticsearch(config.elasticsearch)
        keys = list(_scan(es, config, report, progress))
        if not keys:
            return report
        plan = {"run": uuid.uuid4().hex, "started_at": now_iso(), "keys": keys}
        _save_plan(home, plan)
    else:
        report.resumed = True
    report.planned = len(plan["keys"])
    _enrich(config, plan, report, progress)
    # Kept for the record; only plan.json makes the next run resume.
    (home / "plan.json").replace(home / "last-plan.json")
    return report


def _scan(
    es: Elasticsearch, config: PipelineConfig, report: Report, progress: Progress | None
) -> Iterator[str]:
    first = config.source(config.required_sources[0])
    # Every source, then the enriched document ("" names it) of each key.
    targets = [(config.index_of(s), s.name) for s in config.sources]
    targets.append((config.enriched_index, ""))
    for ids in _pages(es, config.index_of(first)):
        docs = [
            {"_index": index, "_id": key, "_source": False} for key in ids for index, _ in targets
        ]
        hits = es.mget(docs=docs)["docs"]
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


def _pages(es: Elasticsearch, index: str) -> Iterator[list[str]]:
    """The ids of every document of ``index``, a page at a time, from one point in time."""
    pit = es.open_point_in_time(index=index, keep_alive=KEEP_ALIVE)["id"]
    after: list[Any] | None = None
    try:
        while True:
            response = es.search(
                pit={"id": pit, "keep_alive": KEEP_ALIVE},
                size=PAGE,
                sort=["_shard_doc"],
                source=False,
                search_after=after,
                track_total_hits=False,
            )
            pit = response.get("pit_id", pit)
            hits = response["hits"]["hits"]
            if not hits:
                return
            after = hits[-1]["sort"]
            yield [hit["_id"] for hit in hits]
    finally:
        es.close_point_in_time(id=pit)


def _enrich(
    config: PipelineConfig, plan: dict[str, Any], report: Report, progress: Progress | None
) -> None:
    metrics = Metrics()
    stage = EnrichBatch(config, metrics, STAGE)
    keys: list[str] = plan["keys"]
    size = max(1, config.pipeline.mget_chunk // len(config.sources))
    for batch_id, start in enumerate(range(0, len(keys), size)):
        records: list[tuple[bytes | None, tuple[str, int, int]]] = [
            (_ready(config, key, plan["started_at"]), (STAGE, 0, start + i))
            for i, key in enumerate(keys[start : start + size])
        ]
        stage.handle(batch_id, records)
        report.enriched = metrics.get("enricher.enriched")
        report.dead_letters = metrics.get("enricher.dlq")
        if progress:
            progress(report)


def _ready(config: PipelineConfig, key: str, at: str) -> bytes:
    sources = list(config.source_names)
    return ReadyEvent(key=key, sources=sources, first_ack_at=at, fired_at=at).to_bytes()


def _load_plan(home: Path) -> dict[str, Any] | None:
    path = home / "plan.json"
    return json.loads(path.read_text()) if path.exists() else None


def _save_plan(home: Path, plan: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    # The run id is the "query id" BatchOutput keys its batch markers with.
    (home / "metadata").write_text(json.dumps({"id": plan["run"]}) + "\n")
    tmp = home / "plan.json.tmp"
    tmp.write_text(json.dumps(plan))
    tmp.replace(home / "plan.json")
