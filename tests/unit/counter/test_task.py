"""The counter's executor task turns each output row into a record or a count (no Spark)."""

from __future__ import annotations

import json

import pyarrow as pa

from fusion.core.config import PipelineConfig
from fusion.counter import clock
from fusion.counter.rows import OUTPUT_COLUMNS
from fusion.counter.task import EventOutputs, partition_events
from fusion.observe import names
from fusion.spark.tasks import attributed

CONFIG = PipelineConfig.model_validate(
    {
        "pipeline": {"name": "task", "key_field": "id", "deadline_resolution": "1s"},
        "sources": [{"name": "billing"}, {"name": "notes"}],
    }
)


def _rows(*rows: dict[str, object]) -> pa.Table:
    return pa.Table.from_pylist([{name: row.get(name) for name in OUTPUT_COLUMNS} for row in rows])


def test_each_kind_of_row_becomes_its_record_or_count() -> None:
    ready = json.dumps({"key": "k1", "fired_at": "2026-11-25T00:00:00.000000Z"})
    rows = _rows(
        {"kind": "new", "key": "k1"},
        {"kind": "ready", "key": "k1", "event": ready},
        {
            "kind": "dead",
            "key": "k2",
            "reason": "no source",
            "raw": "{}",
            "topic": "acks",
            "partition": 0,
            "offset": 7,
        },
        {"kind": "timer", "key": "k3", "event": "2500"},
        {
            "kind": "count",
            "count_name": "indexer.billing.indexed",
            "count_value": 5,
            "executor": "exec-1",
        },
    )

    decided = partition_events(EventOutputs.of(CONFIG), rows, enriches=True)

    topics = [topic for topic, _, _ in decided.records]
    assert topics == [CONFIG.ready_topic, CONFIG.dlq_topic]
    assert decided.counts[names.COUNTER_KEYS] == 1
    assert decided.counts[names.COUNTER_FIRED] == 1
    assert decided.counts[names.COUNTER_DLQ] == 1
    assert decided.counts[f"{clock.PREFIX}3000"] == 1
    # The indexer's count, passed on as it was counted, and who counted it.
    assert decided.counts["indexer.billing.indexed"] == 5
    assert decided.counts[attributed("indexer.billing.indexed", "exec-1")] == 5
    assert [wanted.key for wanted in decided.to_enrich] == ["k1"]
