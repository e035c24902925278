"""The crash matrix: `fusion run` is killed at the dangerous points, run again, and checked.

Each run is a separate `fusion run` process (its own Spark driver and JVM)
on the same checkpoints, given a fresh slice of the data so that every stage
has work when its kill point is armed. ``FUSION_CRASH_AT`` (:mod:`fusion.core.faults`)
kills, at one named point:

- the driver process (``<stage>.driver.*``: between the tasks' commits and
  the driver's batch marker, or after it but before Spark's commit): the run
  dies by SIGKILL, and the next run resumes from the checkpoints;
- the executor JVM (``...:jvm``; in local mode the whole Spark application),
  from a Python worker or from the JVM writer inside its open transaction:
  the run dies, and the next one resumes;
- the Python worker of a task (every other point: inside the bulk write, the
  lookup, an open Kafka transaction, ...): Spark retries the task in a fresh
  worker, which takes over the task's transactional id; the run goes on to
  the end.

A point must really be hit (``FUSION_FAULT_DIR`` records it), and a run must
end the way its kill says. The last run's kills are all retried tasks: it
resumes from every crash before it and runs until idle. Then the result is compared
with the generator's expected join: every complete key enriched, none
missing, no key fired twice in the committed ready topic, no incomplete key
fired, the enriched topic has each key exactly once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.bench.generator import Dataset, GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from tests.integration.pipelines import assert_exact_join, drop, write_config_file
from tests.integration.runs import assert_enriched, crash

SOURCES = ["billing", "insurance", "medicine"]
Runs = list[tuple[list[str], str]]
# One run per entry, each after its own slice of the data: (points armed, how the run ends).
# The default layout: one query indexes (Python), publishes the acks (JVM), counts (JVM),
# enriches what fired (Python) and publishes the events (JVM); one driver marker per batch.
SINGLE_RUNS: Runs = [
    (["counter.driver.before_commit"], "killed"),  # every task committed, the driver not
    (["counter.driver.after_commit"], "killed"),  # the driver committed, Spark's batch not
    (["enricher.after_lookup:jvm"], "died"),  # the whole JVM, between lookup and write
    # The whole JVM halted inside a writer's open transaction (kill -9, not an exception):
    (["indexer.before_commit:jvm"], "died"),  # acks sent, not committed
    (["counter.before_commit:jvm"], "died"),  # events and enriched records sent, not committed
    # Tasks, each retried within the same run (Python workers, or the JVM writer's task):
    (
        [
            "indexer.before_bulk",  # during indexing
            "indexer.after_bulk",  # documents in Elasticsearch, no ack yet
            "indexer.before_commit",  # acks inside the open transaction
            "indexer.after_commit",  # acks committed; the retry hands the same acks on
            "enricher.after_write",  # enriched documents written, no event published yet
            "counter.before_commit",  # events and enriched records inside the open transaction
            "counter.after_commit",  # events committed, the batch not
        ],
        "finished",
    ),
]
# One query per stage, the acks and ready events on their topics.
STAGES_RUNS: Runs = [
    (["indexer.driver.before_commit"], "killed"),  # tasks committed acks, the driver not
    (["counter.driver.after_commit"], "killed"),  # counted and committed, Spark's batch not
    (["enricher.after_lookup:jvm"], "died"),  # the whole JVM, between lookup and write
    (
        [
            "indexer.before_bulk",
            "indexer.after_bulk",
            "indexer.before_commit",
            "indexer.after_commit",
            "counter.before_commit",  # ready events inside the open transaction
            "counter.after_commit",
            "enricher.after_write",  # enriched documents written, the enriched topic not
            "enricher.before_commit",
            "enricher.after_commit",
        ],
        "finished",
    ),
]
# The Python counter engine, in the default layout: the kills around the batch's commits
# (a replay recomputes the events from the engine's state) and every task point.
PYTHON_RUNS: Runs = [SINGLE_RUNS[0], SINGLE_RUNS[1], SINGLE_RUNS[-1]]
LAYOUTS = {
    "single": ({}, SINGLE_RUNS),
    "stages": ({"enrich_in": "enricher"}, STAGES_RUNS),
    "single-python": ({"counter_engine": "python"}, PYTHON_RUNS),
}


def _slices(data: Dataset, count: int) -> list[list[tuple[str, str, bytes]]]:
    """The records split by key into ``count`` slices (a key's records stay together)."""
    keys = sorted({key for _, key, _ in data.records})
    slice_of = {key: i * count // len(keys) for i, key in enumerate(keys)}
    return [[r for r in data.records if slice_of[r[1]] == n] for n in range(count)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_kill_at_every_point_loses_nothing_and_fires_nothing_twice(
    layout: str, settings: Settings, tmp_path: Path
) -> None:
    options, runs = LAYOUTS[layout]
    config_file = write_config_file(
        settings,
        tmp_path / "pipeline.toml",
        SOURCES,
        trigger_interval="200 milliseconds",
        layout=layout.partition("-")[0],
        **options,
    )
    config = PipelineConfig.load(config_file, env={})
    options = GenOptions(keys=84, seed=21, duplicate_rate=0.2, missing_rate=0.2)
    data = build_dataset(config, options)
    kafka_topics.ensure_topics(config)
    try:
        for records, (points, ends) in zip(_slices(data, len(runs)), runs, strict=True):
            produce(config, records)
            crash(config_file, settings, points, ends, tmp_path)
        # The last run resumed from every earlier crash and went on until idle: the clean
        # run after the crashes.
        assert runs[-1][1] == "finished"
        assert_enriched(config, len(data.expected))

        assert_exact_join(settings, config, data.expected)
    finally:
        drop(config)
