"""What the modes are measured against: the physical floor, and the counter alone.

The floor is the fastest any pipeline could index the dataset (bulk from
Python, no Spark); the counter alone is the counting step without the
indexers before it or the enricher after it, beside Spark counting the same
acks by itself (:mod:`fusion.bench.jvm_baseline`).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from elasticsearch import helpers

from acks import Ack
from fusion import pipeline
from fusion.bench.generator import Dataset
from fusion.bench.jvm_baseline import fraction, run_jvm_baseline
from fusion.bench.process import PipelineProcess
from fusion.bench.report import lower_median
from fusion.core import CounterEngineName, PipelineConfig, Settings, now_iso, now_utc
from fusion.elastic import client as es_client
from fusion.enricher import FoundDoc, build_enriched
from fusion.kafka import Publisher
from fusion.observe import Figures
from fusion.ops import teardown

OPERATORS = {"jvm": "JVM processor", "python": "Python StatefulProcessor"}


def run_counter_only(
    config: PipelineConfig,
    dataset: Dataset,
    workdir: Path,
    engine: CounterEngineName = "jvm",
    baseline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The counter alone (on ``engine``) over one ack per record: acks per second of Spark time.

    The acks are produced first, twice: a warm-up wave on other keys, then the
    measured one. The counter reads one wave's worth per micro-batch, so its
    first batch (in a cold JVM: class loading, code generation, JIT) takes the
    warm-up wave; the rate is the measured wave's acks over the micro-batch
    time after that first batch (Spark's own durations, so query start-up and
    idle triggers do not count). The cold first batch is reported too.
    """
    teardown.delete_all(config)
    # The counter alone publishes its events and enriches nothing (the acks name no documents).
    config = config.model_copy(
        update={
            "pipeline": config.pipeline.model_copy(
                update={
                    "max_offsets_per_trigger": len(dataset.records),
                    "layout": "stages",
                    "enrich_in": "enricher",
                    "counter_engine": engine,
                }
            )
        }
    )
    pipeline.prepare(config)
    by_topic = config.source_of_topic
    publisher = Publisher(config.kafka, {"linger.ms": 20, "batch.num.messages": 10_000})
    acked_at = now_utc()
    for suffix in ("~warmup", ""):
        for offset, (topic, key, _) in enumerate(dataset.records):
            ack = Ack(
                key=key + suffix, source=by_topic[topic], index=topic, doc_id=key + suffix,
                seq_no=offset, primary_term=1, version=1, topic=topic, partition=0,
                offset=offset, acked_at=acked_at,
            )  # fmt: skip
            publisher.send(config.acks_topic, key + suffix, ack.to_bytes())
    publisher.flush()
    # It stops by itself once it read every ack and saw none for 3 s: by then
    # Spark has reported the progress of each batch that read acks.
    with PipelineProcess(config, workdir, only="counter", stop_when_idle=3) as run:
        counts: dict[str, int] = run.finish()["counters"]
    # Spark alone over the same acks, right after: what this machine's JVM counts without
    # Fusion (``baseline``: measured in this run already, over acks the same as these).
    if baseline is None:
        baseline = run_jvm_baseline(config, workdir)
    teardown.delete_all(config)
    figures = Figures(counts)
    rows, busy = figures.input_records("counter"), figures.batch_seconds("counter")
    cold_rows, cold_seconds = figures.first_batch("counter")
    warm_rows, warm_seconds = rows - cold_rows, busy - cold_seconds
    counter = {
        "operator": f"transformWithState ({OPERATORS[engine]})",
        "engine": engine,
        "acks": warm_rows,
        "fired": figures.fired // 2,
        "seconds": round(warm_seconds, 3),
        "acks_per_second": round(warm_rows / warm_seconds) if warm_seconds else 0,
        "cold_first_batch": {
            "acks": cold_rows,
            "seconds": round(cold_seconds, 3),
            "acks_per_second": round(cold_rows / cold_seconds) if cold_seconds else 0,
        },
    }
    return counter | {"baseline": baseline, "of_baseline": fraction(counter, baseline)}


def median_counter_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The counter-alone run with the median rate (the lower middle one), and every run's rate.

    Its fractions of Spark's own count (warm and cold apart) are the medians of
    each run's fraction of the baseline measured in that run.
    """
    ordered = sorted(runs, key=lambda r: r["acks_per_second"])
    median = ordered[(len(ordered) - 1) // 2] | {"runs": [r["acks_per_second"] for r in runs]}
    shares = [r["of_baseline"] for r in runs if "of_baseline" in r]
    if shares:
        median["of_baseline"] = {
            phase: lower_median([s[phase] for s in shares if s[phase] is not None])
            for phase in ("warm", "cold")
        } | {"runs": shares}
    return median


def run_floor(settings: Settings, dataset: Dataset, config: PipelineConfig) -> float:
    """Seconds to bulk-index the N·K source documents and K enriched ones straight from Python."""
    es = es_client.connect(settings.elasticsearch)
    prefix = f"bench-floor-{uuid.uuid4().hex[:8]}"
    by_topic = config.source_of_topic
    now = now_iso()
    enriched = [
        build_enriched(
            config.key_field,
            key,
            {name: FoundDoc(doc[name], 1) for name in config.source_names},
            now,
            now,
        )
        for key, doc in dataset.expected.items()
    ]
    started = time.monotonic()
    actions = [
        {"_index": f"{prefix}-{by_topic[topic]}", "_id": key, "_source": json.loads(value)}
        for topic, key, value in dataset.records
    ] + [
        {"_index": f"{prefix}-enriched", "_id": doc[config.key_field], "_source": doc}
        for doc in enriched
    ]
    # As fast as the node takes them: no refresh per request, one refresh at the end.
    helpers.bulk(es, actions, chunk_size=config.pipeline.bulk_chunk, max_chunk_bytes=50 << 20)
    es.indices.refresh(index=f"{prefix}-*")
    elapsed = time.monotonic() - started
    es.options(ignore_status=404).indices.delete(index=f"{prefix}-*")
    return elapsed
