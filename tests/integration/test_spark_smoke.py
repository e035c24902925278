"""PySpark Structured Streaming reads a real Kafka topic through the connector jars."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from fusion.core.settings import Settings
from fusion.kafka import client as kafka_client


def test_streaming_query_reads_kafka_topic(
    spark: Any, settings: Settings, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("spark", partitions=2)
    producer = kafka_client.producer(settings.kafka)
    sent = {f"key-{i}": {"n": i} for i in range(25)}
    for key, value in sent.items():
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode())
    assert producer.flush(30) == 0
    sink = f"seen_{uuid.uuid4().hex}"

    stream = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.as_spark_options())
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
    )
    query = stream.writeStream.format("memory").queryName(sink).start()
    try:
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()

    rows = spark.sql(f"SELECT key, value FROM {sink}").collect()
    assert {row.key: json.loads(row.value) for row in rows} == sent
