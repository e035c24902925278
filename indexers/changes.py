"""Change events as Debezium publishes them: the row a record carries, and whether it is gone.

A source of ``format = "debezium"`` reads each record's value as a change event:

- the envelope ``{"before": ..., "after": ..., "op": ..., "source": ...}``,
  alone or inside Debezium's JSON converter wrapper ``{"schema": ...,
  "payload": {...}}``: ``c`` (insert), ``r`` (a row of the snapshot taken
  when the connector started) and ``u`` (update) carry the row in ``after``;
  ``d`` (delete) in ``before`` (the whole row with ``REPLICA IDENTITY FULL``,
  else its primary key);
- the flattened row of Debezium's ``ExtractNewRecordState`` transform: the
  columns themselves, with ``__deleted: "true"`` on a delete, and whatever
  ``__``-prefixed fields the transform added (left out of the row).

A primary-key change comes as a delete of the old key and an insert of the
new one: both ordinary events here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPS_WITH_AFTER = {"c": "insert", "r": "snapshot read", "u": "update"}
METADATA_PREFIX = "__"  # ExtractNewRecordState's added fields: __deleted, __op, __table, ...


@dataclass(frozen=True)
class Change:
    """The row of a change event, and whether the event deletes it."""

    row: dict[str, Any]
    deleted: bool


class NotAChange(ValueError):
    """The value is no change event Fusion reads: the reason."""


def change_of(value: Any) -> Change:
    """The change a Debezium event's value describes; :class:`NotAChange` with the reason."""
    if not isinstance(value, dict):
        raise NotAChange(f"not a JSON object (got {type(value).__name__})")
    event = value
    if "payload" in value and "schema" in value:
        event = value["payload"]
        if not isinstance(event, dict):
            raise NotAChange("the converter's 'payload' is not an object")
    if "op" in event:
        return _enveloped(event)
    if "__deleted" in event:
        return _flattened(event)
    raise NotAChange(
        "not a Debezium change event: no 'op' (an envelope) and no '__deleted' "
        "(ExtractNewRecordState with delete.handling.mode=rewrite)"
    )


def _enveloped(event: dict[str, Any]) -> Change:
    op = event["op"]
    if isinstance(op, str) and op in OPS_WITH_AFTER:
        row = event.get("after")
        if not isinstance(row, dict):
            raise NotAChange(f"a change event of op {op!r} ({OPS_WITH_AFTER[op]}) without 'after'")
        return Change(row, deleted=False)
    if op == "d":
        row = event.get("before")
        if not isinstance(row, dict):
            raise NotAChange("a delete (op 'd') without 'before' (the deleted row's key)")
        return Change(row, deleted=True)
    raise NotAChange(f"unknown op {_short(op)} (Debezium's are c, r, u, d)")


def _flattened(event: dict[str, Any]) -> Change:
    deleted = str(event["__deleted"]).lower() == "true"
    row = {name: value for name, value in event.items() if not name.startswith(METADATA_PREFIX)}
    return Change(row, deleted)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
