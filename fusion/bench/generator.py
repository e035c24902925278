"""Generate realistic partial records for a pipeline, and the join they should produce.

:func:`build_dataset` is pure and deterministic for a seed: per key one record
per source (some keys miss one source), some records sent twice, everything
shuffled across topics. :func:`produce` sends it to Kafka (Kafka key = join
key) and :func:`write_expected` writes the expected join as JSON lines::

    {"key": "K-0000001", "complete": true, "missing": [], "doc": {"txn_id": ..., "billing": ...}}
    {"key": "K-0000002", "complete": false, "missing": ["medicine"], "doc": null}
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fusion.bench.avro_records import avro_encoder
from fusion.core import PipelineConfig, SourceConfig, dumps, iso_utc
from fusion.kafka import Publisher

Value = Callable[[random.Random], Any]
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
PROGRESS_EVERY = 5_000  # records between two progress reports of produce()


def _money(rng: random.Random) -> float:
    return round(rng.uniform(20, 5000), 2)


def _when(rng: random.Random) -> str:
    return iso_utc(_EPOCH + timedelta(seconds=rng.randrange(300 * 86400)))


def _pick(*choices: Any) -> Value:
    return lambda rng: rng.choice(choices)


def _int(low: int, high: int) -> Value:
    return lambda rng: rng.randint(low, high)


# Fields for the sources of the original healthcare design; other sources get
# fields from their mapping hints plus a few generic ones.
_HEALTHCARE: dict[str, dict[str, Value]] = {
    "billing": {
        "amount": _money,
        "currency": _pick("EUR", "USD", "GBP", "INR"),
        "billed_at": _when,
        "status": _pick("open", "paid", "disputed"),
    },
    "insurance": {
        "provider": _pick("Aetna", "Allianz", "AXA", "Cigna", "Star Health"),
        "policy_id": lambda rng: f"POL-{rng.randrange(10**8):08d}",
        "coverage_pct": _int(40, 100),
        "approved": lambda rng: rng.random() < 0.9,
    },
    "medicine": {
        "drug": _pick("amoxicillin", "ibuprofen", "metformin", "atorvastatin", "omeprazole"),
        "dosage_mg": _pick(50, 100, 250, 500, 850),
        "quantity": _int(1, 60),
    },
    "treatment": {
        "procedure": _pick("consultation", "x-ray", "mri", "blood-test", "physiotherapy"),
        "physician": lambda rng: f"Dr. {rng.choice(['Rao', 'Meyer', 'Okafor', 'Silva', 'Kim'])}",
        "ward": _pick("A", "B", "C", "ICU", "outpatient"),
        "started_at": _when,
    },
}

_BY_TYPE: dict[str, Value] = {
    "keyword": lambda rng: f"code-{rng.randrange(1000):03d}",
    "text": _pick("routine check", "follow-up visit", "urgent admission", "lab review"),
    "long": _int(0, 10**9),
    "integer": _int(0, 1000),
    "double": _money,
    "float": _money,
    "boolean": lambda rng: rng.random() < 0.5,
    "date": _when,
    "object": lambda rng: {"note": f"n{rng.randrange(100)}"},
}


def _fields_of(source: SourceConfig) -> dict[str, Value]:
    fields = dict(_HEALTHCARE.get(source.name, {"value": _money, "code": _BY_TYPE["keyword"]}))
    # Hints add the fields a source declares; known realistic generators stay.
    for name, kind in source.fields.items():
        fields.setdefault(name, _BY_TYPE[kind])
    return fields


@dataclass(frozen=True)
class GenOptions:
    keys: int
    seed: int = 42
    duplicate_rate: float = 0.05
    missing_rate: float = 0.02
    shuffle: bool = True
    key_prefix: str = "K"
    # Each record also gets a "notes" field of this many characters (0: none).
    pad_bytes: int = 0


@dataclass
class Dataset:
    """Records in send order, and per key what the join must produce."""

    records: list[tuple[str, str, bytes]] = field(default_factory=list)  # (topic, key, value)
    expected: dict[str, dict[str, Any]] = field(default_factory=dict)  # complete keys only
    missing: dict[str, list[str]] = field(default_factory=dict)  # incomplete keys


def build_dataset(config: PipelineConfig, options: GenOptions) -> Dataset:
    rng = random.Random(options.seed)
    data = Dataset()
    width = max(7, len(str(options.keys)))
    fields = {source.name: _fields_of(source) for source in config.sources}
    # Avro sources: each record in the registry's wire format, its schema registered once.
    avro = {s.name: avro_encoder(config, s) for s in config.sources if s.format == "avro"}
    for number in range(1, options.keys + 1):
        key = f"{options.key_prefix}-{number:0{width}d}"
        skipped = None
        if rng.random() < options.missing_rate:
            skipped = rng.choice(config.sources).name
        joined: dict[str, Any] = {config.key_field: key}
        for source in config.sources:
            if source.name == skipped:
                continue
            record = {config.key_field: key} | {n: f(rng) for n, f in fields[source.name].items()}
            if options.pad_bytes:
                pad = rng.randbytes(options.pad_bytes // 2 + 1).hex()
                record["notes"] = pad[: options.pad_bytes]
            if source.name in avro:
                value = avro[source.name](record)
            else:
                event = change_event(record, source.name) if source.format != "json" else record
                value = dumps(event)
            data.records.append((config.topic_of(source), key, value))
            if rng.random() < options.duplicate_rate:
                data.records.append((config.topic_of(source), key, value))
            joined[source.name] = record
        if skipped is None:
            data.expected[key] = joined
        else:
            data.missing[key] = [skipped]
    if options.shuffle:
        rng.shuffle(data.records)
    return data


def change_event(row: dict[str, Any], table: str, ms: int = 1_795_000_000_000) -> dict[str, Any]:
    """``row``'s insert as Debezium's PostgreSQL connector writes it (JSON converter without
    schemas): the envelope, with the ``source`` block such an event carries."""
    source = {
        "version": "3.6.1.Final", "connector": "postgresql", "name": "bench",
        "ts_ms": ms, "snapshot": "false", "db": "fusion", "sequence": '[null,"26365784"]',
        "ts_us": ms * 1000, "ts_ns": ms * 1_000_000, "schema": "public", "table": table,
        "txId": 771, "lsn": 26365784, "xmin": None,
    }  # fmt: skip
    return {"before": None, "after": row, "source": source, "transaction": None, "op": "c",
            "ts_ms": ms, "ts_us": ms * 1000, "ts_ns": ms * 1_000_000}  # fmt: skip


def produce(
    config: PipelineConfig,
    records: Iterable[tuple[str, str, bytes]],
    progress: Callable[[int], None] | None = None,
    publisher: Publisher | None = None,
) -> int:
    """Send the records, keyed by join key; return how many Kafka confirmed.

    ``progress`` hears the count sent so far every ``PROGRESS_EVERY`` records.
    ``publisher``: one already connected (:func:`bench_publisher`), else a new one.
    """
    publisher = publisher or bench_publisher(config)
    before = publisher.sent
    for topic, key, value in records:
        publisher.send(topic, key, value)
        if progress is not None and (publisher.sent - before) % PROGRESS_EVERY == 0:
            progress(publisher.sent - before)
    publisher.flush()
    if progress is not None:
        progress(publisher.sent - before)
    return publisher.sent - before


def bench_publisher(config: PipelineConfig) -> Publisher:
    """The benchmarks' producer: batches of up to 10,000 records, 20 ms linger."""
    return Publisher(config.kafka, {"linger.ms": 20, "batch.num.messages": 10_000})


def write_expected(dataset: Dataset, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for key, doc in dataset.expected.items():
            out.write(json.dumps({"key": key, "complete": True, "missing": [], "doc": doc}) + "\n")
        for key, missing in dataset.missing.items():
            line = {"key": key, "complete": False, "missing": missing, "doc": None}
            out.write(json.dumps(line) + "\n")
