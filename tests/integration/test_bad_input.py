"""Every kind of bad input, each with its own test, against one real pipeline run.

The module runs the pipeline once on good records mixed with one record of
each bad kind, then each test checks that its record went to the dead-letter
topic with ``{reason, source, topic, partition, offset, original}``, that the
metrics count it, and that the good keys were enriched anyway.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acks.contract import Ack
from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.errors import ExitCode
from fusion.core.events import ReadyEvent, now_iso, now_utc
from fusion.core.machine.ports import free_port
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe.metrics import Metrics
from fusion.pipeline import status_line
from tests.integration.pipelines import (
    drop,
    enriched_docs,
    make_config,
    read_raw,
    read_topic,
    run_pipeline,
    write_config_file,
)

BIN = Path(sys.executable).parent
MAX_BYTES = 12_000  # room for the deep and the long records below, under the limit
BAD_RECORDS = {
    "invalid-json": b'{"entity_id": "X1", "amount": ',
    "not-an-object": b'["entity_id", "X2"]',
    "missing-key": b'{"amount": 12.5}',
    "null-key": b'{"entity_id": null, "amount": 1}',
    "wrong-type-key": b'{"entity_id": {"id": 7}, "amount": 1}',
    "mapping-conflict": b'{"entity_id": "X3", "amount": "twelve"}',
    "repeated-field": b'{"entity_id": "X6", "amount": 1, "amount": 2}',
    "oversized": b'{"entity_id": "X4", "blob": "' + b"x" * MAX_BYTES + b'"}',
    # Valid JSON by the grammar, but what Python's parser or Unicode will not take: each used
    # to raise in the task, on every attempt and every restart, and stop the query for good.
    "surrogate-key": b'{"entity_id": "\\ud800", "amount": 1}',
    "surrogate-text": b'{"entity_id": "X7", "note": "a\\udfffb", "amount": 1}',
    "huge-integer": b'{"entity_id": "X8", "amount": 1' + b"0" * 5_000 + b"}",
    "deep-nesting": b'{"entity_id": "X9", "tree": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
}
# Larger than a dead letter may be (PipelineConfig.message_limit): its letter carries the start.
HUGE = b'{"entity_id": "X5", "blob": "' + b"y" * 300_000 + b'"}'
MALFORMED_READY = b'{"key": "K-garbled", "sources": "not a list"}'
# Elasticsearch's date type takes these; the enricher cannot compute a latency from them.
EPOCH_READY = b'{"key": "K-epoch", "sources": [], "first_ack_at": 1767225600000, "fired_at": 1}'
DATE_READY = (
    b'{"key": "K-date", "sources": [], "first_ack_at": "2026-01-01", "fired_at": "2026-01-01"}'
)


@dataclass
class BadRun:
    config: PipelineConfig
    metrics: Metrics
    dead: list[dict[str, Any]]
    expected: dict[str, Any]
    enriched: dict[str, Any]

    positions: dict[bytes, tuple[int, int]]  # each bad record's (partition, offset)

    def letter(self, original: bytes) -> dict[str, Any]:
        matches = [d for d in self.dead if d["original"] == original.decode()]
        assert len(matches) == 1, (original, [d["reason"] for d in self.dead])
        return matches[0]


# Both layouts read the same source records; only the layout of one query per stage
# reads acks and ready events from topics, where bad ones can be produced. The stages
# run twice, once per counter engine: its bad acks reach the counter.
@pytest.fixture(scope="module", params=["single", "stages", "stages-python"])
def bad_run(
    request: pytest.FixtureRequest,
    spark: Any,
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[BadRun]:
    layout, _, engine = request.param.partition("-")
    staged = {"layout": "stages", "enrich_in": "enricher"} if layout == "stages" else {}
    config = make_config(
        settings,
        tmp_path_factory.mktemp("bad"),
        ["billing", "insurance"],
        max_record_bytes=MAX_BYTES,
        counter_engine=engine or "jvm",
        **staged,
    )
    data = config.model_dump(mode="python")
    data["sources"][0]["fields"] = {"amount": "double"}
    config = PipelineConfig.model_validate(data)
    good = build_dataset(config, GenOptions(keys=20, seed=4, missing_rate=0, duplicate_rate=0))
    billing = config.topic_of(config.source("billing"))
    bad = [(billing, name, value) for name, value in BAD_RECORDS.items()]
    bad.append((billing, "huge", HUGE))
    stray = Ack(
        key="K-stray", source="pharmacy", index="elsewhere", doc_id="K-stray", seq_no=0,
        primary_term=1, version=1, topic="pharmacy", partition=0, offset=0, acked_at=now_utc(),
    )  # fmt: skip
    gone = ReadyEvent(key="K-gone", sources=["billing", "insurance"], first_ack_at=now_iso(),
                      fired_at=now_iso())  # fmt: skip
    kafka_topics.ensure_topics(config)
    events = [
        (config.acks_topic, stray.key, stray.to_bytes()),
        (config.ready_topic, gone.key, gone.to_bytes()),
        (config.ready_topic, "K-garbled", MALFORMED_READY),
        (config.ready_topic, "K-epoch", EPOCH_READY),
        (config.ready_topic, "K-date", DATE_READY),
    ]
    # The bad records first: the good keys after them are enriched all the same.
    produce(config, bad + (events if layout == "stages" else []))
    produce(config, good.records)
    expected_dead = len(bad) + (len(events) if layout == "stages" else 0)
    metrics = run_pipeline(
        spark,
        config,
        done=lambda m: m.get("enricher.enriched") >= 20 and m.total(".dlq") >= expected_dead,
    )
    dead = [letter for _, letter in read_topic(settings, config.dlq_topic)]
    positions = {
        value: where for topic in (billing, config.ready_topic, config.acks_topic)
        for _, value, where in read_raw(settings, topic)
    }  # fmt: skip
    enriched = enriched_docs(settings, config)
    yield BadRun(config, metrics, dead, good.expected, enriched, positions)
    drop(config)


def _check_indexer_letter(run: BadRun, name: str, reason: str, key: str | None = None) -> None:
    letter = run.letter(BAD_RECORDS[name])
    assert reason in letter["reason"], letter["reason"]
    assert letter["stage"] == "indexer" and letter["source"] == "billing"
    assert letter["key"] == key
    assert letter["topic"] == run.config.topic_of(run.config.source("billing"))
    assert (letter["partition"], letter["offset"]) == run.positions[BAD_RECORDS[name]]
    assert run.metrics.get("indexer.billing.dlq") == len(BAD_RECORDS) + 1  # and the huge one


def test_invalid_json(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "invalid-json", "invalid JSON")


def test_a_json_value_that_is_not_an_object(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "not-an-object", "not a JSON object (got list)")


def test_a_missing_key_field(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "missing-key", "missing key field 'entity_id'")


def test_a_null_key(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "null-key", "key field 'entity_id' is null")


def test_a_key_of_the_wrong_type(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "wrong-type-key", "must be a string or an integer")


def test_a_field_that_conflicts_with_the_mapping(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "mapping-conflict", "rejected by Elasticsearch", key="X3")
    assert "amount" in bad_run.letter(BAD_RECORDS["mapping-conflict"])["reason"]


def test_a_record_that_repeats_a_field(bad_run: BadRun) -> None:
    # Its own bytes go to Elasticsearch, which refuses a repeated field (it is not dropped).
    _check_indexer_letter(bad_run, "repeated-field", "rejected by Elasticsearch", key="X6")
    assert "Duplicate field 'amount'" in bad_run.letter(BAD_RECORDS["repeated-field"])["reason"]


@pytest.mark.parametrize(
    ("name", "reason", "key"),
    [
        ("surrogate-key", "key field 'entity_id' is not valid Unicode", None),
        ("surrogate-text", "not valid Unicode text", "X7"),
        ("huge-integer", "invalid JSON: Exceeds the limit (4300 digits)", None),
        ("deep-nesting", "invalid JSON: maximum recursion depth exceeded", None),
    ],
)
def test_valid_json_that_python_or_unicode_refuses(
    bad_run: BadRun, name: str, reason: str, key: str | None
) -> None:
    _check_indexer_letter(bad_run, name, reason, key=key)


def test_an_oversized_record(bad_run: BadRun) -> None:
    _check_indexer_letter(bad_run, "oversized", f"exceeds the {MAX_BYTES}-byte limit")


def test_a_record_too_large_for_a_dead_letter_travels_cut_with_its_digest(bad_run: BadRun) -> None:
    digest = hashlib.sha256(HUGE).hexdigest()
    [letter] = [d for d in bad_run.dead if d.get("original_sha256") == digest]
    assert f"record of {len(HUGE)} bytes exceeds the {MAX_BYTES}-byte limit" in letter["reason"]
    assert letter["original_size"] == len(HUGE)
    assert HUGE.decode().startswith(letter["original"]) and len(letter["original"]) < len(HUGE)
    assert (letter["partition"], letter["offset"]) == bad_run.positions[HUGE]


def _staged(run: BadRun) -> None:
    if run.config.pipeline.layout != "stages":
        pytest.skip("the single query reads no acks or ready topic to produce bad events into")


def test_an_ack_for_a_source_not_in_the_config(bad_run: BadRun) -> None:
    _staged(bad_run)
    [letter] = [d for d in bad_run.dead if d["stage"] == "counter"]
    assert "unknown source 'pharmacy'" in letter["reason"]
    assert letter["topic"] == bad_run.config.acks_topic and letter["key"] == "K-stray"
    assert bad_run.metrics.get("counter.dlq") == 1


@pytest.mark.parametrize(
    ("event", "field"),
    [(MALFORMED_READY, "sources"), (EPOCH_READY, "first_ack_at"), (DATE_READY, "first_ack_at")],
    ids=["sources-not-a-list", "epoch-milliseconds", "date-without-time"],
)
def test_a_malformed_ready_event_is_dead_lettered_by_the_enricher(
    bad_run: BadRun, event: bytes, field: str
) -> None:
    _staged(bad_run)
    letter = bad_run.letter(event)
    key = json.loads(event)["key"]
    assert letter["stage"] == "enricher" and letter["key"] == key
    assert letter["reason"].startswith(f"malformed ready event: {field}: "), letter["reason"]
    assert letter["topic"] == bad_run.config.ready_topic
    assert (letter["partition"], letter["offset"]) == bad_run.positions[event]
    assert key not in bad_run.enriched


def test_a_ready_event_whose_documents_are_gone_is_rechecked_and_reported(
    bad_run: BadRun,
) -> None:
    _staged(bad_run)
    [letter] = [d for d in bad_run.dead if d["stage"] == "enricher" and d["key"] == "K-gone"]
    assert "no longer has source(s) ['billing', 'insurance']" in letter["reason"]
    assert letter["key"] == "K-gone" and letter["topic"] == bad_run.config.ready_topic
    assert "K-gone" not in bad_run.enriched
    assert bad_run.metrics.get("enricher.dlq") == 4  # this one and the three malformed events


def test_the_pipeline_kept_going_and_the_status_line_counts_the_dead_letters(
    bad_run: BadRun,
) -> None:
    assert set(bad_run.enriched) == set(bad_run.expected)
    dead = len(BAD_RECORDS) + 1 + (5 if bad_run.config.pipeline.layout == "stages" else 0)
    assert f"dlq {dead}" in " ".join(status_line(bad_run.metrics).split())
    assert len(bad_run.dead) == dead


def test_an_unreachable_server_stops_at_start_with_one_line_and_no_secret(
    settings: Settings, tmp_path: Path
) -> None:
    config_file = write_config_file(settings, tmp_path / "p.toml", ["a", "b"])
    secret = "hunter2-do-not-print"
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "FUSION_HOME": str(settings.runtime.home),
        "FUSION_ES_URL": f"http://127.0.0.1:{free_port()}",
        "FUSION_ES_USERNAME": "elastic",
        "FUSION_ES_PASSWORD": secret,
    }
    result = subprocess.run(
        [BIN / "fusion", "run", "--config", str(config_file)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip

    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Elasticsearch at http://127.0.0.1:" in lines[0] and "unreachable" in lines[0]
    assert secret not in result.stderr + result.stdout


def test_a_bad_config_file_stops_at_start_with_one_line(tmp_path: Path) -> None:
    config_file = tmp_path / "p.toml"
    config_file.write_text('[pipeline]\nname = "x"\nkey_field = "id"\n[[sources]]\nname = "a"\n')

    result = subprocess.run(
        [BIN / "fusion", "run", "--config", str(config_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert result.returncode == ExitCode.CONFIG, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert str(config_file) in lines[0] and "sources" in lines[0]


def test_dead_letters_carry_the_documented_fields(bad_run: BadRun) -> None:
    # docs/contracts.md: "Dead letters".
    documented = {
        "reason", "stage", "source", "topic", "partition", "offset", "key", "original",
        "original_encoding", "failed_at", "original_size", "original_sha256",
    }  # fmt: skip
    for letter in bad_run.dead:
        assert set(letter) == documented, letter
        assert letter["stage"] in ("indexer", "counter", "enricher")
        assert isinstance(letter["reason"], str) and letter["reason"]
        assert isinstance(letter["partition"], int) and isinstance(letter["offset"], int)
