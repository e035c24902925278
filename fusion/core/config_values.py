"""The values a pipeline file may hold: its fixed choices, names, durations and intervals.

Each is a type the pipeline's models declare (:mod:`fusion.core.config`), checked
when the config is built, with a message that names the fix.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator

FieldType = Literal[
    "keyword", "text", "long", "integer", "double", "float", "boolean", "date", "object"
]


LookupMode = Literal["batched", "per-source"]


# What a key whose deadline passed with required sources missing leaves behind:
# an incomplete event only, or also a partial enriched document ("complete": false).
OnTimeout = Literal["incomplete", "partial"]


# What a change to an already-enriched key's source does: rewrite its enriched document, or not.
OnUpdate = Literal["reenrich", "ignore"]


# What a deleted source row of an already-enriched key does: rewrite its enriched document
# without it ("complete": false, "missing" names it), or delete the enriched document.
OnDelete = Literal["reenrich", "delete"]


# Where a fired key is enriched: in the counter's own output task (one micro-batch
# hop less: the default), or by an enricher query of its own, which reads the
# ready topic (a deployment that runs the enricher apart from the counter).
EnrichIn = Literal["counter", "enricher"]


# How the stages run: "single", one Spark query that indexes, counts and enriches
# in each micro-batch (a key is enriched in the batch its last source arrives in);
# or "stages", a query per stage handing over through Kafka topics, each of which
# `fusion run --only` can run in a process of its own.
Layout = Literal["single", "stages"]


# Which code keeps the counter's keyed state: the JVM processor (fast, compiled on
# first use) or the Python one (the decisions' specification itself, several times
# slower: every state call is a round trip to Spark's state server).
CounterEngineName = Literal["jvm", "python"]


# How a source's records are written: JSON documents, or Debezium's change events
# (the envelope, with or without its converter's wrapper, or ExtractNewRecordState's rows).
SourceFormat = Literal["json", "debezium", "avro", "debezium-avro"]
# Formats whose values are Avro in a schema registry's wire format (indexers/avro.py).
AVRO_FORMATS = ("avro", "debezium-avro")


# How the enriched index maps a children source's array: ``nested`` (a query matches within
# one child: an order with a line of sku X *and* qty 2) or ``object`` (lighter; a query
# matches across the children).
ChildMapping = Literal["nested", "object"]


RECORD_KEY = "record_key"  # a key location in the Kafka record key, not the value


@dataclass(frozen=True)
class KeySpec:
    """Where a source's join key is: in the record key or the value, and the path in it."""

    in_record_key: bool
    path: tuple[str, ...]  # empty: the whole record key

    @property
    def text(self) -> str:
        head = (RECORD_KEY,) if self.in_record_key else ()
        return ".".join((*head, *self.path))


@functools.lru_cache(maxsize=256)
def key_spec(text: str) -> KeySpec:
    """The key location a ``key`` string names: a dotted path in the value
    (``after.order_id``), ``record_key`` (the Kafka key as a string) or
    ``record_key.<path>`` (a path in the Kafka key's JSON); ValueError if none."""
    parts = tuple(text.split("."))
    if not text.strip() or any(not part.strip() for part in parts):
        raise ValueError(
            f"{text!r} names no key: a field ('txn_id'), a dotted path ('after.order_id'), "
            "'record_key' or 'record_key.<field>'"
        )
    if parts[0] == RECORD_KEY:
        return KeySpec(True, parts[1:])
    return KeySpec(False, parts)


def check_key(value: str) -> str:
    key_spec(value)
    return value


_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def check_name(value: str) -> str:
    # Names become parts of Elasticsearch index names, which must be lowercase.
    if not _NAME.match(value):
        raise ValueError(
            f"{value!r} must be lowercase letters, digits, '-' or '_' (it names indexes and topics)"
        )
    return value


def parse_duration(value: object) -> float | None:
    """``"90s"``, ``"10m"``, ``"2h"``, ``"7d"``, ``"250ms"`` or a number of seconds, as seconds."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        seconds = value
    else:
        match = _DURATION.match(str(value))
        if match is None:
            raise ValueError(f'{value!r} is not a duration; write e.g. "90s", "10m", "2h" or "7d"')
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]
    if seconds is not None and seconds <= 0:
        raise ValueError(f"{value!r} must be a positive duration")
    return None if seconds is None else float(seconds)


Duration = Annotated[float | None, BeforeValidator(parse_duration)]


PositiveDuration = Annotated[float, BeforeValidator(parse_duration)]


_SPARK_UNITS = {"millisecond": "ms", "milliseconds": "ms", "second": "s", "seconds": "s",
                "minute": "m", "minutes": "m"}  # fmt: skip


_ES_INTERVAL = re.compile(r"^(-1|\d+(ms|s|m|h|d))$")


def parse_trigger(value: object) -> str:
    """A trigger interval as Spark takes it (``"250 milliseconds"``), from ``"250ms"``,
    ``"1s"``, ``"0"`` (as fast as the queries go) or Spark's own spelling."""
    text = str(value).strip().lower()
    words = text.split()
    if len(words) == 2 and words[1] in _SPARK_UNITS:
        text = words[0] + _SPARK_UNITS[words[1]]
    if text in ("0", "0s", "0ms"):
        return "0 milliseconds"
    match = _DURATION.match(text)
    if match is None or match.group(2) not in ("ms", "s", "m"):
        raise ValueError(
            f'{value!r} is not a trigger interval; write e.g. "250ms", "1s" or "0" (no pause)'
        )
    return f"{round(float(match.group(1)) * _UNIT_SECONDS[match.group(2)] * 1000)} milliseconds"


def check_refresh_interval(value: str) -> str:
    """An Elasticsearch refresh interval: ``"200ms"``, ``"1s"``, ``"30s"`` or ``"-1"`` (off)."""
    if not _ES_INTERVAL.match(value.strip()):
        raise ValueError(
            f'{value!r} is not an Elasticsearch interval; write e.g. "200ms", "1s" or "-1"'
        )
    return value.strip()


TriggerInterval = Annotated[str, BeforeValidator(parse_trigger)]


RefreshInterval = Annotated[str, BeforeValidator(check_refresh_interval)]
