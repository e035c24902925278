"""JSON on the record path: orjson where it gives the standard library's answer, else that.

A record's parse, its canonical form for the digest and every document and event
Fusion writes go through here: about a third of a Python worker's time at the
kept-up rate was the standard library's JSON (docs/benchmark.md, the record path).
orjson does the same work in a fifth of the time, but refuses what the standard
library reads or writes: an integer beyond 64 bits (which it would even read as
a float), ``NaN`` and ``Infinity``, UTF-16 or UTF-32 text, a lone surrogate's
escape, a key that is no string, nesting deeper than 255 levels on the way out.
Each function then gives the standard library's answer, so what Fusion accepts,
and the reason of what it refuses, stay as they were.

Two differences remain, both in numbers the standard library spells otherwise:
a float in exponent form is written ``1e16`` (not ``1e+16``), which changes the
digest of a document holding one (a row written again after an upgrade counts
as changed once); and orjson writes ``NaN`` as ``null``, so :func:`dumps` is
handed only what Elasticsearch gave back or Fusion built, never a record's
parsed document (which Elasticsearch must see, and refuse, as it came).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# orjson reads an integer beyond 64 bits as a float, silently: a run of 19 digits goes to
# the standard library, which keeps it whole (a long float's digits go too, read the same).
# Found by mapping each digit to 9 and anything else to a space: a sixteenth of a regular
# expression's time, which was more than orjson's parse itself.
_DIGITS = bytes(ord("9") if chr(b) in "0123456789" else ord(" ") for b in range(256))
_LONG_NUMBER = b"9" * 19


def loads(data: bytes) -> Any:
    """Parse JSON; what orjson refuses, as the standard library reads it (or its error)."""
    if _LONG_NUMBER in data.translate(_DIGITS):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON (the encoding of every Fusion event and enriched document)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: a 65-bit integer, a non-string key, ...
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def canonical(value: Any) -> bytes:
    """Compact UTF-8 JSON with the keys of every object sorted: the same bytes for the same
    content, whatever its key order (what a document's digest hashes)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode()
