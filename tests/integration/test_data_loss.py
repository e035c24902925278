"""Records deleted from a source topic before the pipeline read them are reported, not lost quietly.

As retention (or deleteRecords) does to a pipeline that was stopped too long:
the records after the committed offsets are deleted while it is stopped, then
it runs again. It goes on, and says so: a count per source and partition, an
alert on the status line, and a dead letter per partition with the offset range.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from fusion.bench.generator import produce
from fusion.core.settings import Settings
from fusion.kafka import client as kafka_client
from fusion.kafka import topics as kafka_topics
from fusion.observe.figures import Figures
from fusion.observe.names import DATA_LOSS_ALERT
from fusion.pipeline import status_line
from tests.integration.pipelines import drop, make_config, read_topic, run_pipeline, source_record


def test_records_deleted_before_they_were_indexed_are_counted_alerted_and_dead_lettered(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["a", "b"])
    topic = config.topic_of(config.source("a"))
    try:
        kafka_topics.ensure_topics(config)
        produce(config, [source_record(config, s, f"K{n}", n=n) for n in range(10) for s in "ab"])
        run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") >= 10)

        # Stopped: 50 more records arrive on a, and are deleted before the pipeline reads them.
        produce(config, [source_record(config, "a", f"L{n}", n=n) for n in range(50)])
        admin = kafka_client.admin(settings.kafka)
        consumer = kafka_client.consumer(settings.kafka, "test-data-loss")
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = [
            TopicPartition(topic, p, consumer.get_watermark_offsets(TopicPartition(topic, p))[1])
            for p in partitions
        ]
        consumer.close()
        for future in admin.delete_records(ends).values():
            future.result(timeout=60)
        # ...and a later key, which the pipeline still enriches.
        produce(config, [source_record(config, s, "LATER", n=1) for s in "ab"])

        metrics = run_pipeline(
            spark,
            config,
            done=lambda m: m.get("enricher.enriched") >= 1 and Figures(m.counts()).lost >= 50,
        )

        figures = Figures(metrics.counts())
        assert figures.source("a").lost == 50 and figures.source("b").lost == 0
        assert sum(figures.source("a").lost_by_partition.values()) == 50
        assert "lost 50" in " ".join(status_line(metrics).split())
        assert (
            "50 source records deleted before they were indexed"
            in metrics.alerts()[DATA_LOSS_ALERT]
        )
        letters = [d for _, d in read_topic(settings, config.dlq_topic)]
        assert letters and all(d["reason"].startswith("records deleted before") for d in letters)
        assert {d["partition"] for d in letters} <= set(partitions)
        assert sum(int(d["reason"].split("(")[1].split(")")[0]) for d in letters) == 50
        assert all(d["stage"] == "indexer" and d["source"] == "a" for d in letters)
    finally:
        drop(config)
