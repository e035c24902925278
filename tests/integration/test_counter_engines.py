"""The Python and the JVM counter engines decide alike, run as Spark runs them.

Both engines' processors sit in one streaming query over the same input, so
every micro-batch hands both the same acks with the same batch timestamp;
their timers and Spark's state TTL run as in production (processing time, a
no-data batch fires what is due). Each batch's output rows of the two must be
equal, events byte for byte, and at the end so must every key's state, read
back from the checkpoint with Spark's state reader (one schema for both, so a
checkpoint's state means the same to either).

The input is a directory of JSON files, one per step (Spark's file source, a
file per micro-batch): random acks over a few keys, with duplicates, replays,
malformed and unknown acks, and waits between steps long enough for timeouts
and the state TTL to pass.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.errors import ConfigError
from fusion.core.events import iso_from_ms
from fusion.core.settings import Settings
from fusion.counter import processor
from fusion.counter.decisions import Rules
from fusion.counter.engine import rules_json
from fusion.counter.rows import INPUT_SCHEMA
from tests.integration.pipelines import (
    RunningPipeline,
    drop,
    make_config,
    read_topic,
    run_pipeline,
)

SOURCES = ("a", "b", "c")
# Short deadlines: the test waits for them in processing time.
RULES = [
    Rules(
        frozenset(SOURCES), frozenset("ab"), {"a": None, "b": 1_500, "c": 1_000}, "reenrich", 4_000
    ),
    Rules(frozenset(SOURCES), frozenset(SOURCES), dict.fromkeys(SOURCES), "ignore", None),
]
STEPS = 14
# Acks that make the rarer decisions happen whatever the batches' timing, by step: a U key
# has b and c, then a (required, no timeout: due at state_ttl) in the next step, which comes
# soon (SHORT): a timer registered, then deleted. V fires and then changes (updated), three
# times: a slow machine may let one V's state expire between its two steps; L
# misses b's deadline and gets b after step 5's long pause (late).
SCRIPT: dict[int, list[tuple[str, str, int, str]]] = {
    0: [("U-0", "b", 1, "d1"), ("U-0", "c", 1, "d1")]
    + [("V-0", source, 1, "d1") for source in SOURCES],
    1: [("U-0", "a", 1, "d1"), ("V-0", "a", 2, "d2")],
    2: [("U-1", "b", 1, "d1"), ("U-1", "c", 1, "d1")]
    + [("V-1", source, 1, "d1") for source in SOURCES],
    3: [("U-1", "a", 1, "d1"), ("V-1", "b", 2, "d2")],
    4: [("L-0", "a", 1, "d1")],
    6: [("L-0", "b", 1, "d1")],
    7: [("U-2", "b", 1, "d1"), ("U-2", "c", 1, "d1")]
    + [("V-2", source, 1, "d1") for source in SOURCES],
    8: [("U-2", "a", 1, "d1"), ("V-2", "c", 2, "d2")],
}
SHORT = {0, 2, 4, 7}


def scripted_acks(step: int, now_ms: int) -> list[dict[str, Any]]:
    return [
        {
            "k": key,
            "source": source,
            "acked_at": iso_from_ms(now_ms),
            "version": version,
            "digest": digest,
            "raw": f"raw-{step}-{key}-{source}",
            "topic": "acks",
            "partition": 0,
            "offset": step * 100 + 90 + i,
            "kind": "ack",
        }
        for i, (key, source, version, digest) in enumerate(SCRIPT.get(step, []))
    ]


def random_acks(rng: random.Random, step: int, now_ms: int) -> list[dict[str, Any]]:
    acks = []
    for i in range(rng.randint(5, 25)):
        offset = step * 100 + i
        acks.append(
            {
                "k": rng.choice([f"K-{rng.randint(0, 19)}"] * 20 + [""]),
                "source": rng.choice([*SOURCES, *SOURCES, "zzz", None]),
                "acked_at": iso_from_ms(now_ms - rng.randint(0, 3) * 250)
                if rng.random() < 0.95
                else None,
                "version": rng.choice([None, 0, 1, 1, 2, 3]),
                "digest": rng.choice([None, "d1", "d2", "d2"]),
                "raw": f"raw-{offset}",
                "topic": "acks",
                "partition": rng.randint(0, 1),
                "offset": offset,
                "kind": "ack",
            }
        )
    return acks


def both_engines(spark: Any, inbox: Path, rules: Rules) -> Any:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    acks = spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(str(inbox))
    jvm = spark._jvm.fusion.counter.CounterQuery
    by_jvm = DataFrame(jvm.count(acks._jdf, rules_json(rules)), spark)
    by_python = processor.count(acks, rules)
    return by_jvm.withColumn("engine", F.lit("jvm")).unionByName(
        by_python.withColumn("engine", F.lit("python"))
    )


def _wait_for_file(query: Any, step: int, timeout: float = 120.0) -> None:
    """Until a finished batch read the ``step``-th file (Spark's processAllAvailable never
    returns here: with processing-time timers every trigger runs a batch)."""
    deadline = time.monotonic() + timeout
    while True:
        assert query.exception() is None, query.exception()
        progress = query.lastProgress
        if progress and progress["sources"]:
            end = progress["sources"][0]["endOffset"] or {}
            end = json.loads(end) if isinstance(end, str) else end
            if end.get("logOffset", -1) >= step:
                return
        assert time.monotonic() < deadline, f"file {step} was not read"
        time.sleep(0.1)


@pytest.mark.parametrize("case", range(len(RULES)))
def test_both_engines_emit_the_same_rows_and_keep_the_same_state(
    spark: Any, tmp_path: Path, case: int
) -> None:
    rules = RULES[case]
    rng = random.Random(20261124 + case)
    inbox, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    inbox.mkdir()
    batches: list[tuple[int, Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]] = []

    def compare(batch: Any, batch_id: int) -> None:
        rows = batch.collect()  # a test's few hundred rows
        by = {e: Counter(tuple(r)[:-1] for r in rows if r.engine == e) for e in ("jvm", "python")}
        batches.append((batch_id, by["jvm"], by["python"]))

    query = (
        both_engines(spark, inbox, rules)
        .writeStream.foreachBatch(compare)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        for step in range(STEPS):
            now_ms = int(time.time() * 1000)
            acks = random_acks(rng, step, now_ms) + scripted_acks(step, now_ms)
            (inbox / f"{step:03}.json").write_text("\n".join(json.dumps(a) for a in acks))
            _wait_for_file(query, step)
            # Processing time passes: timers of this step come due in no-data batches.
            pause = rng.choice([0.2, 0.5, 1.2, 2.5] + [6.0] * (step in (5, 10)))
            pause = 0.2 if step in SHORT else pause
            pause *= rules.state_ttl_ms is not None  # nothing comes due without deadlines
            until = time.monotonic() + pause
            while time.monotonic() < until:
                assert query.exception() is None, query.exception()
                time.sleep(0.1)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()

    exercised: Counter[str] = Counter()
    for batch_id, by_jvm, by_python in batches:
        assert by_jvm == by_python, f"batch {batch_id}: {by_jvm - by_python} / {by_python - by_jvm}"
        exercised.update(row[0] for row in by_jvm.elements())
        exercised.update(
            json.loads(row[2]).get("reason", "") for row in by_jvm if row[2] and "{" in row[2]
        )
    print(dict(exercised))
    assert min(exercised[k] for k in ("new", "ready", "dead")) >= 3, exercised
    if rules.state_ttl_ms is not None:
        deadlines = ("timer", "untimer", "incomplete", "timeout", "state_ttl", "late", "updated")
        assert min(exercised[k] for k in deadlines) >= 1, exercised
    else:
        assert exercised["timer"] == exercised["incomplete"] == exercised["updated"] == 0

    states = [
        Counter(
            repr(r)
            for r in spark.read.format("statestore")
            .option("operatorId", operator)
            .option("stateVarName", "key_state")
            .load(str(checkpoint))
            .select("key", "value")
            .collect()
        )
        for operator in (0, 1)
    ]
    assert states[0] == states[1]
    assert sum(states[0].values()) >= 10


def test_the_other_engine_on_a_counter_checkpoint_stops_with_one_line(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    """A checkpoint's state stays with the engine that wrote it; the other one is refused."""
    config = make_config(settings, tmp_path, ["a", "b"])
    data = build_dataset(config, GenOptions(keys=5, seed=6, missing_rate=0, duplicate_rate=0))
    try:
        produce(config, data.records)
        run_pipeline(spark, config, done=lambda m: m.get("enricher.enriched") == 5)
        section = config.pipeline.model_copy(update={"counter_engine": "python"})
        python = config.model_copy(update={"pipeline": section})

        with pytest.raises(ConfigError) as refused:
            RunningPipeline(spark, python)
        line = str(refused.value)
        assert "\n" not in line
        assert "written by the jvm engine" in line and 'counter_engine = "jvm"' in line
        # The engine that wrote it goes on from its state: nothing fires twice.
        produce(config, data.records[:2])
        run_pipeline(spark, config, done=lambda m: m.total(".acks") >= 2)
        assert len(read_topic(settings, config.ready_topic)) == 5
    finally:
        drop(config)
