"""The indexer's task in a single query (``layout = "single"``): its acks go on to the counter.

In a single query, one micro-batch indexes, counts and enriches. The indexer
task (:mod:`indexers.task`) is the same; its output goes to
``fusion.output.IndexPublisher`` in the executor's JVM, which publishes the
acks and dead letters exactly once and hands each ack to the counter's keyed
state in the same batch. So each ack row here also carries the fields the
counter reads (:data:`HANDOFF_SCHEMA`: the join key, source, ack time,
version, digest, the source record's position, whether it deleted its row, and a
dimension slot's row). With dimensions, the changed rows' fan-outs and the
slots to fill travel the same way (sources :data:`FANOUT_ROW`, :data:`LOOKUP_ROW`),
to the resolve stage
(:mod:`indexers.resolve`), which the counter reads from instead.
"""

from __future__ import annotations

from typing import Any

from acks.contract import Ack
from acks.fanout import FanoutRequest
from fusion.core.events import iso_utc
from fusion.spark.tasks import OUTPUT_COLUMNS, output_columns
from indexers.dimensions import Named
from indexers.fanout import Where
from indexers.task import Indexed

# The sources of handed-on rows for the resolve stage, not acks: a changed dimension row's
# fan-out, a slot to fill. No source can be named so (a name has no control characters).
FANOUT_ROW = "\u0000fanout"
LOOKUP_ROW = "\u0000lookup"

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
    handed = [(_fields(ack), ack.to_bytes()) for ack in indexed.handed]
    handed += [(_fanout_fields(r, where), r.to_bytes()) for r, where in indexed.fanouts]
    handed += [(_lookup_fields(named), named.to_bytes()) for named in indexed.lookups]
    fields += [row for row, _ in handed]
    columns = {name: values + [None] * len(handed) for name, values in columns.items()}
    columns["task"][size:] = [indexed.task] * len(handed)
    columns["value"][size:] = [value for _, value in handed]
    for (name, _), values in zip(HANDOFF_COLUMNS, zip(*fields, strict=True), strict=True):
        columns[name] = list(values)
    every = (*OUTPUT_COLUMNS, *HANDOFF_COLUMNS)
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in every])
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _fanout_fields(request: FanoutRequest, where: Where) -> tuple[Any, ...]:
    """A changed dimension row's fan-out, on its way to the resolve stage: the row's id as the
    key, :data:`FANOUT_ROW` as the source (the request itself is the value)."""
    topic, partition, offset = where
    deleted = request.digest is None
    return (request.id, FANOUT_ROW, iso_utc(request.requested_at), request.version,
            request.digest, topic, partition, offset, deleted, request.dimension, None)  # fmt: skip


def _lookup_fields(named: Named) -> tuple[Any, ...]:
    """A slot to fill, on its way to the resolve stage: its key, :data:`LOOKUP_ROW` as the
    source (the slot itself is the value)."""
    topic, partition, offset = named.where
    return (named.key, LOOKUP_ROW, None, named.version, None, topic, partition, offset, False,
            named.ref, None)  # fmt: skip


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
    )
