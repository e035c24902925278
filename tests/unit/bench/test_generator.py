from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from fusion.bench.generator import GenOptions, build_dataset, write_expected
from fusion.core.config import PipelineConfig

ROOT = Path(__file__).resolve().parents[3]


def _config() -> PipelineConfig:
    return PipelineConfig.load(ROOT / "examples/healthcare.toml", env={})


def test_dataset_has_every_part_of_complete_keys_and_misses_one_of_the_others() -> None:
    config = _config()

    data = build_dataset(config, GenOptions(keys=500, seed=1, duplicate_rate=0.1, missing_rate=0.1))

    assert len(data.expected) + len(data.missing) == 500
    assert 20 < len(data.missing) < 80
    distinct = {(topic, key) for topic, key, _ in data.records}
    for key, doc in data.expected.items():
        assert set(doc) == {"txn_id", "billing", "insurance", "medicine", "treatment"}
        assert all((name, key) in distinct for name in config.source_names)
    for key, missing in data.missing.items():
        assert (missing[0], key) not in distinct
    duplicates = sum(n - 1 for n in Counter((t, k) for t, k, _ in data.records).values())
    assert duplicates > 50


def test_same_seed_same_dataset_and_shuffled_across_topics() -> None:
    config = _config()
    first = build_dataset(config, GenOptions(keys=50, seed=3))
    second = build_dataset(config, GenOptions(keys=50, seed=3))

    assert first.records == second.records
    topics = [topic for topic, _, _ in first.records[:20]]
    assert len(set(topics)) > 1


def test_records_carry_key_field_and_hinted_fields() -> None:
    data = build_dataset(_config(), GenOptions(keys=5, seed=3, missing_rate=0))

    for _, key, value in data.records:
        record = json.loads(value)
        assert record["txn_id"] == key
    billing = data.expected[next(iter(data.expected))]["billing"]
    assert isinstance(billing["amount"], float) and billing["currency"] in {
        "EUR",
        "USD",
        "GBP",
        "INR",
    }


def test_expected_file_lists_complete_and_incomplete_keys(tmp_path: Path) -> None:
    data = build_dataset(_config(), GenOptions(keys=100, seed=5, missing_rate=0.2))

    write_expected(data, tmp_path / "exp.jsonl")

    lines = [json.loads(line) for line in (tmp_path / "exp.jsonl").read_text().splitlines()]
    assert sum(line["complete"] for line in lines) == len(data.expected)
    assert all(line["doc"] is None for line in lines if not line["complete"])


def test_a_debezium_source_gets_change_events_the_indexer_reads_back_as_its_rows() -> None:
    from indexers.records import RawRecord, SourceRecord, parse

    raw_config = _config().model_dump(mode="python")
    raw_config["sources"][0]["format"] = "debezium"
    config = PipelineConfig.model_validate(raw_config)
    dataset = build_dataset(config, GenOptions(keys=20, duplicate_rate=0, missing_rate=0))
    changed = config.topic_of(config.sources[0])
    events = [(key, value) for topic, key, value in dataset.records if topic == changed]
    assert len(events) == 20
    for n, (key, value) in enumerate(events):
        parsed = parse(RawRecord(value, changed, 0, n), config.sources[0].name, config.key_field,
                       1 << 20, "debezium")  # fmt: skip
        assert isinstance(parsed, SourceRecord) and parsed.key == key
        assert parsed.doc == dataset.expected[key][config.sources[0].name]
        assert len(value) > 2 * len(json.dumps(parsed.doc)), "the envelope weighs what it does"
