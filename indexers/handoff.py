"""The indexer's task in a single query (``layout = "single"``): its acks go on to the counter.

In a single query, one micro-batch indexes, counts and enriches. The indexer
task (:mod:`indexers.task`) is the same; its output goes to
``fusion.output.IndexPublisher`` in the executor's JVM, which publishes the
acks and dead letters exactly once and hands each ack to the counter's keyed
state in the same batch. So each ack row here also carries the fields the
counter reads (:data:`HANDOFF_SCHEMA`: the join key, source, ack time,
version, digest, the source record's position, whether it deleted its row, and a
dimension slot's row, and a chain's rows between).
"""

from __future__ import annotations

import json
from typing import Any

from acks import Ack
from fusion.core import iso_utc
from fusion.spark import OUTPUT_COLUMNS, output_columns
from indexers.task import Indexed

HANDOFF_COLUMNS = (
    ("k", "string"),
    ("source", "string"),
    ("acked_at", "string"),
    ("version", "int64"),
    ("digest", "string"),
    ("s_topic", "string"),
    ("s_partition", "int32"),
    ("s_offset", "int64"),
    ("deleted", "bool_"),
    ("ref", "string"),
    ("ref_version", "int64"),
    ("via", "string"),
)
_SPARK_TYPES = {
    "string": "STRING",
    "int64": "BIGINT",
    "int32": "INT",
    "binary": "BINARY",
    "bool_": "BOOLEAN",
}
HANDOFF_SCHEMA = ", ".join(
    f"{name} {_SPARK_TYPES[kind]}" for name, kind in (*OUTPUT_COLUMNS, *HANDOFF_COLUMNS)
)


def handoff_batch(indexed: Any) -> Any:
    """The task's rows of :data:`HANDOFF_SCHEMA`: its records and counts, each ack's fields,
    then the acks it hands on unpublished (no topic; the ack itself as the value).

    ``indexed``: an :class:`~indexers.task.Indexed` (typed loosely: the task runner's hook).
    """
    import pyarrow as pa

    assert isinstance(indexed, Indexed)
    columns = output_columns(indexed)
    size = len(columns["task"])
    first_ack = len(indexed.records) - len(indexed.acks)
    fields: list[tuple[Any, ...]] = [(None,) * len(HANDOFF_COLUMNS)] * first_ack
    fields += [_fields(ack) for ack in indexed.acks]
    fields += [(None,) * len(HANDOFF_COLUMNS)] * (size - len(fields))
    handed = len(indexed.handed)
    fields += [_fields(ack) for ack in indexed.handed]
    columns = {name: values + [None] * handed for name, values in columns.items()}
    columns["task"][size:] = [indexed.task] * handed
    columns["value"][size:] = [ack.to_bytes() for ack in indexed.handed]
    for (name, _), values in zip(HANDOFF_COLUMNS, zip(*fields, strict=True), strict=True):
        columns[name] = list(values)
    every = (*OUTPUT_COLUMNS, *HANDOFF_COLUMNS)
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in every])
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _fields(ack: Ack) -> tuple[Any, ...]:
    return (
        ack.key,
        ack.source,
        iso_utc(ack.acked_at),
        ack.version,
        ack.digest,
        ack.topic,
        ack.partition,
        ack.offset,
        ack.deleted,
        ack.ref,
        ack.ref_version,
        json.dumps(list(ack.via), separators=(",", ":")) if ack.via else None,
    )
