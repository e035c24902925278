"""Where a source's join key is, and the key read from a record (pure).

A source names its key with one string (``key`` in its ``[[sources]]`` table,
else the pipeline's ``key_field``):

- ``customer.id``: a dotted path in the record's value (for change events, in
  the row: ``after``, or ``before`` for a delete);
- ``record_key``: the Kafka record's key, as a string;
- ``record_key.order_id``: a dotted path in the Kafka record's key, read as
  JSON (Debezium writes ``{"order_id": 7}``).

A key is a string or an integer (its decimal text: ``42`` and ``"42"`` are
one key); anything else is a dead letter with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fusion.core import KeySpec

MAX_KEY_BYTES = 512  # Elasticsearch rejects _id values longer than 512 bytes.


class InvalidKey(ValueError):
    """The key is not where its spec says, or is no string or integer: the reason."""


def key_of(spec: KeySpec, value: Mapping[str, Any], record_key: bytes | None) -> str:
    """The record's join key, as text; :class:`InvalidKey` with the reason if it has none."""
    if spec.in_record_key:
        if record_key is None:
            raise InvalidKey("no Kafka record key (the key is the record key)")
        if not spec.path:
            return checked_key(_text_of_bytes(record_key), "the record key")
        try:
            document = json.loads(record_key)
        except (ValueError, RecursionError):
            raise InvalidKey(f"the record key is not JSON (the key is {spec.text!r})") from None
        return checked_key(_at(document, spec.path, spec.text), repr(spec.text))
    return checked_key(_at(value, spec.path, spec.text), f"key field {spec.text!r}")


def _at(document: Any, path: tuple[str, ...], text: str) -> Any:
    found = document
    for depth, part in enumerate(path):
        if not isinstance(found, dict):
            where = ".".join(path[:depth]) or "the document"
            raise InvalidKey(f"missing key field {text!r} ({where} is not an object)")
        if part not in found:
            raise InvalidKey(f"missing key field {text!r}")
        found = found[part]
    return found


def _text_of_bytes(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise InvalidKey("the record key is not UTF-8 text") from None


def checked_key(key: Any, what: str) -> str:
    """The key (or a reference to a dimension's key) as text, or the reason it cannot be one."""
    if key is None:
        raise InvalidKey(f"{what} is null")
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise InvalidKey(f"{what} must be a string or an integer, got {_short(key)}")
    try:
        # An integer key is its decimal text: 42 and "42" are the same key (docs/contracts.md).
        text = str(key)
        encoded = text.encode()
    except (ValueError, RecursionError):
        raise InvalidKey(f"{what} is not valid Unicode (an unpaired surrogate)") from None
    if not text or len(encoded) > MAX_KEY_BYTES:
        raise InvalidKey(f"{what} must be 1 to {MAX_KEY_BYTES} bytes long")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        # Control characters have no place in an id; the counter reserves one such key.
        raise InvalidKey(f"{what} contains a control character")
    return text


def _short(value: Any) -> str:
    """A value for a reason: its repr, cut to 100 characters (a key may be any JSON)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= 100 else text[:97] + "..."
