"""A sample of the property tests' generated records, through a real pipeline.

`tests/unit/indexers/test_records_properties.py` takes any bytes through the
record path offline, up to the bulk action. Here a sample of the same
strategies (`tests/strategies.py`), NaN, Infinity, byte-order marks, UTF-16,
numbers past Python's limits, deep nesting and lone surrogates among them, goes
to a real Elasticsearch node through a running query: each record ends as an
acked document or a dead letter at its own offset (an earlier record of a key
that a later one replaced in the same batch excepted), and the good keys sent
after them are enriched, so no input stopped the query.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from indexers.records import RawRecord, SourceRecord, parse
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    make_config,
    reached,
    read_raw,
    read_topic,
    run_pipeline,
)
from tests.strategies import CRAFTED_VALUES, KEY_FIELD, RAW_VALUE

SAMPLE = 150


def _sample() -> list[bytes]:
    """``SAMPLE`` values drawn from the property test's strategy (the same ones on every
    run), and every crafted value; a value must be bytes to be produced."""
    drawn: list[bytes] = []

    @settings(
        max_examples=SAMPLE,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(RAW_VALUE.filter(lambda value: value is not None))
    def draw(value: bytes) -> None:
        drawn.append(value)

    draw()
    return drawn + CRAFTED_VALUES


def test_generated_records_each_end_as_a_document_or_a_dead_letter_and_the_query_runs_on(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = make_config(settings, tmp_path, ["billing", "insurance"], key_field=KEY_FIELD)
    billing = config.topic_of(config.source("billing"))
    sample = _sample()
    good = build_dataset(config, GenOptions(keys=10, seed=9, missing_rate=0, duplicate_rate=0))
    goods = [record for record in good.records if record[0] == billing]
    try:
        kafka_topics.ensure_topics(config)
        # One Kafka key: one partition, in order, so "replaced by a later record" is defined.
        produce(config, [(billing, "sample", value) for value in sample])
        produce(config, good.records)
        records = names.source_count("billing", names.SOURCE_RECORDS)
        run_pipeline(
            spark,
            config,
            done=reached({records: len(sample) + len(goods), "enricher.enriched": 10}),
        )

        positions = [where for key, _, where in read_raw(settings, billing) if key == "sample"]
        assert len(positions) == len(sample)
        acked = {
            (ack["partition"], ack["offset"]): ack["key"]
            for _, ack in read_topic(settings, config.acks_topic)
            if ack["source"] == "billing"
        }
        dead = {
            (letter["partition"], letter["offset"]): letter["reason"]
            for _, letter in read_topic(settings, config.dlq_topic)
        }
        limit = config.pipeline.max_record_bytes
        keys = [_key(v, where, billing, limit) for v, where in zip(sample, positions, strict=True)]
        settled = [(where in acked) + (where in dead) for where in positions]
        for n, value in enumerate(sample):
            assert settled[n] <= 1, (value[:200], "both acked and dead-lettered")
            # Neither: only a record a later one of the same key replaced in its batch.
            replaced = keys[n] is not None and any(
                keys[later] == keys[n] and settled[later] for later in range(n + 1, len(sample))
            )
            assert settled[n] or replaced, (value[:200], "neither acked nor dead-lettered")
        assert dead, "the sample holds records no index takes"
        assert acked, "the sample holds records an index takes"
        assert set(good.expected) <= set(enriched_docs(settings, config))
    finally:
        drop(config)


def _key(value: bytes, where: tuple[int, int], topic: str, limit: int) -> str | None:
    """The key the indexer reads in ``value``, None for a record it refuses."""
    parsed = parse(RawRecord(value, topic, *where), "billing", KEY_FIELD, limit)
    return parsed.key if isinstance(parsed, SourceRecord) else None
