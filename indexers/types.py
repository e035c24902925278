"""Declared field types, checked per record before it is indexed (``strict = true``).

A source's ``fields = { amount = "double", ... }`` hints its index's mapping.
Elasticsearch coerces what it can ("12" into an integer field), so without a
check a record of the wrong type is indexed silently, and the enriched index,
whose mapping grows in another order, may refuse the document its parts were
accepted into. With ``strict``, a record whose declared field is missing, null
or of another type is a dead letter naming the field, the declared type and
what was found; fields in ``optional_fields`` may be missing or null.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from fusion.core import FieldType

_RANGES = {"integer": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
# A source's declared fields, and those of them that may be missing or null.
Declared = tuple[Mapping[str, FieldType], Collection[str]]


def type_error(
    doc: Mapping[str, Any], fields: Mapping[str, FieldType], optional: Collection[str] = ()
) -> str | None:
    """Why ``doc`` does not hold its declared ``fields``, or None when it does."""
    for path, kind in fields.items():
        found, value = _at(doc, path)
        if not found or value is None:
            if path in optional:
                continue
            return f"field {path!r} declared {kind} is {'null' if found else 'missing'} (strict)"
        if (problem := _mismatch(kind, value)) is not None:
            return f"field {path!r} declared {kind}, found {problem} (strict)"
    return None


def _at(doc: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """The value at a dotted path (``customer.id``: nested objects), and whether it is there."""
    if path in doc:
        return True, doc[path]
    value: Any = doc
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _mismatch(kind: FieldType, value: Any) -> str | None:
    """What ``value`` is, when it is not of ``kind`` (None when it is)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind in _RANGES and isinstance(value, int) and not isinstance(value, bool):
        low, high = _RANGES[kind]
        return None if low <= value <= high else f"{value}, outside the {kind} range"
    if kind in ("double", "float") and number:
        return None if math.isfinite(value) else f"{value}, not a finite number"
    fits = {
        "keyword": isinstance(value, str),
        "text": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "date": _is_date(value),
    }
    return None if fits.get(kind, False) else f"{_json_type(value)} {_shown(value)}"


def _is_date(value: Any) -> bool:
    """As Elasticsearch's default date format reads it: ISO-8601, or epoch milliseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    if not isinstance(value, str) or " " in value:  # Elasticsearch's wants a "T" there
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                       (dict, "object"), (list, "array")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
