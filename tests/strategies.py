"""Hypothesis strategies for what a source topic may hold: any bytes, any JSON document.

Arbitrary bytes, and arbitrary JSON documents in every encoding JSON may come
in, with the values that parse yet used to raise later (unpaired surrogates,
integers Python will not convert, nesting deeper than the parser goes, numbers
JSON cannot spell, control characters and byte-order marks). The unit tests
take each through the record path offline; an integration test sends a sample
through a real pipeline.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

KEY_FIELD = "id"

ODD_TEXT = st.sampled_from(
    ["\ud800", "a\udfffb", "\x00", "\x7f", "\ufeff", "é", "𝄞", "\u2028", "", " " * 600]
)
TEXT = st.one_of(st.text(max_size=20), ODD_TEXT, st.text(st.characters(codec=None), max_size=5))
NUMBER = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON_VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
KEY = st.one_of(TEXT, NUMBER, st.none(), st.booleans(), JSON_VALUE)
DOCUMENT = st.one_of(
    st.builds(lambda key, rest: {**rest, KEY_FIELD: key}, KEY, st.dictionaries(TEXT, JSON_VALUE)),
    JSON_VALUE,
)
ENCODING = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"])
# Raw texts json.dumps cannot make: numbers past Python's limits, nesting past the parser's.
CRAFTED_VALUES = [
    b'{"id": 1' + b"0" * 5000 + b"}",
    b'{"id": "k", "n": 1' + b"0" * 5000 + b"}",
    b'{"id": "k", "deep": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
    b'{"id": "k", "deep": ' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}",
    b'{"id": "k", "x": 1e999, "y": -1e999, "z": NaN}',
    b'{"id": 1e999}',
    b'{"id": "\\ud800"}',
    b'{"id": "k", "s": "\\udc00\\ud800"}',
    b'{"id": "k", "id": "k2"}',
    b"\xef\xbb\xbf" + b'{"id": "k"}',
    b"\xff\xfe" + '{"id": "k"}'.encode("utf-16-le"),
    b'{"id": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 bytes (not valid UTF-8)
]
CRAFTED = st.sampled_from(CRAFTED_VALUES)


def encoded(document: Any, encoding: str, ascii_only: bool) -> bytes:
    text = json.dumps(document, ensure_ascii=ascii_only)
    return text.encode(encoding, errors="surrogatepass")


RAW_VALUE = st.one_of(
    st.binary(max_size=200),
    st.builds(encoded, DOCUMENT, ENCODING, st.booleans()),
    CRAFTED,
    st.none(),
)
