"""A task works in chunks of ``task_chunk_bytes`` and spills output beyond it: nothing is lost.

One pipeline (three sources, records of about 20 KB, ``task_chunk_bytes`` at
its least, 64 KiB) on real servers: the indexer takes its records a few at a
time (one bulk request per chunk), the enrichment looks up one key per group
(its documents weigh about 60 KB), and the writer holds 64 KiB of a task's
output and spills the rest. Every key is still enriched exactly once with
all its documents, and published once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.settings import Settings
from tests.integration.pipelines import drop, enriched_docs, make_config, read_topic, run_pipeline

KEYS = 30


def test_a_pipeline_working_in_small_chunks_enriches_every_key_once(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    sources = ["billing", "insurance", "medicine"]
    config = make_config(settings, tmp_path, sources, task_chunk_bytes=64 * 1024)
    data = build_dataset(
        config, GenOptions(keys=KEYS, seed=9, duplicate_rate=0, missing_rate=0, pad_bytes=20_000)
    )
    try:
        produce(config, data.records)
        metrics = run_pipeline(spark, config, lambda m: m.get("enricher.enriched") >= KEYS)

        docs = enriched_docs(settings, config)
        assert set(docs) == set(data.expected)
        for key, doc in docs.items():
            doc.pop("fusion")
            assert doc == data.expected[key]
        published = Counter(key for key, _ in read_topic(settings, config.enriched_topic))
        assert published == Counter(set(data.expected))
        # It did work in chunks: 3-4 records of 20 KB per 64 KiB chunk (one bulk request
        # each; a task per partition, 6 in all, would make 6), 1 key per lookup group.
        bulk = sum(metrics.get(f"indexer.{s}.bulk_requests") for s in sources)
        assert bulk >= len(data.records) // 5
        assert metrics.get("enricher.es_requests") == KEYS
        assert metrics.get("tasks.spilled_records") > 0
    finally:
        drop(config)
