"""What Spark's Kafka source is told to read: committed records, bounded batches, and a quiet
stream's batches held until enough records arrive or the delay has passed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from fusion.kafka.stream_source import spark_source_options
from tests.unit.core.test_config import lifecycle_config


def _options(pipeline: dict[str, Any], starting: str | None = None) -> dict[str, str]:
    return spark_source_options(lifecycle_config(pipeline, {}), ["a", "b"], starting)


def test_a_read_takes_committed_records_from_the_earliest_in_bounded_batches() -> None:
    options = _options({"max_offsets_per_trigger": 5_000})

    assert options["subscribe"] == "a,b"
    assert options["startingOffsets"] == "earliest"
    assert options["kafka.isolation.level"] == "read_committed"
    assert options["maxOffsetsPerTrigger"] == "5000"
    # Without a minimum, a batch starts as soon as any record is there.
    assert "minOffsetsPerTrigger" not in options and "maxTriggerDelay" not in options


def test_a_resumed_read_starts_where_it_is_told() -> None:
    assert _options({}, '{"a":{"0":7}}')["startingOffsets"] == '{"a":{"0":7}}'


@pytest.mark.parametrize(
    ("delay", "spark"), [("250ms", "250ms"), ("2s", "2000ms"), (1.5, "1500ms"), (None, "1000ms")]
)
def test_a_minimum_batch_waits_at_most_the_delay_spelled_as_spark_reads_it(
    delay: str | float | None, spark: str
) -> None:
    pipeline: dict[str, Any] = {"min_offsets_per_trigger": 2_000}
    if delay is not None:
        pipeline["max_trigger_delay"] = delay

    options = _options(pipeline)

    assert options["minOffsetsPerTrigger"] == "2000"
    assert options["maxTriggerDelay"] == spark
    assert options["maxOffsetsPerTrigger"] == "100000"


@pytest.mark.parametrize("pipeline", [{"min_offsets_per_trigger": 0}, {"max_trigger_delay": "0s"}])
def test_a_minimum_of_nothing_or_no_delay_is_refused(pipeline: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        _options(pipeline)
