"""The record path's JSON gives the standard library's answers, faster (fusion.core.codec)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fusion.core import codec

SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # beyond 64 bits too: orjson alone would read them as floats
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=20,
)


def _exact(value: Any) -> Any:
    """The value with its numbers' types (1 and 1.0 differ, as a key's text would), its
    objects' keys in order."""
    if isinstance(value, dict):
        return sorted((k, _exact(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_exact(v) for v in value]
    return (type(value).__name__, repr(value))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUE, st.sampled_from(["compact", "spaced", "ascii"]))
@example(2**64, "compact")
@example(-(2**63) - 1, "compact")
@example({"n": 18446744073709551616}, "spaced")
def test_any_json_reads_as_the_standard_library_reads_it(value: Any, style: str) -> None:
    text = {
        "compact": json.dumps(value, separators=(",", ":"), ensure_ascii=False),
        "spaced": json.dumps(value, indent=2, ensure_ascii=False),
        "ascii": json.dumps(value),
    }[style]
    data = text.encode("utf-8", "surrogatepass")
    try:
        expected = _exact(json.loads(data))
    except ValueError as exc:
        with pytest.raises(type(exc)):
            codec.loads(data)
        return
    assert _exact(codec.loads(data)) == expected


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": NaN, "b": -Infinity}',
        '\ufeff{"a": 1}'.encode(),  # a byte order mark
        '{"a": 1}'.encode("utf-16"),
        b'{"a": "\\ud800"}',  # a lone surrogate's escape
        b'{"a": 1' + b"0" * 30 + b"}",
    ],
)
def test_what_orjson_refuses_reads_as_the_standard_library_reads_it(data: bytes) -> None:
    assert _exact(codec.loads(data)) == _exact(json.loads(data))


def test_what_neither_reads_raises_the_standard_librarys_error() -> None:
    with pytest.raises(ValueError, match="Exceeds the limit"):
        codec.loads(b'{"n": 1' + b"0" * 5000 + b"}")
    with pytest.raises(RecursionError):
        codec.loads(b"[" * 20_000 + b"]" * 20_000)


@settings(max_examples=300, deadline=None)
@given(VALUE)
def test_what_is_written_reads_back_as_it_was(value: Any) -> None:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            codec.dumps(value)
        return
    assert _exact(json.loads(codec.dumps(value))) == _exact(value)
    assert _exact(json.loads(codec.canonical(value))) == _exact(value)


@given(st.dictionaries(st.text(), SCALAR, max_size=6), st.randoms())
def test_the_canonical_form_is_the_same_whatever_the_key_order(
    doc: dict[str, Any], rng: Any
) -> None:
    keys = list(doc)
    rng.shuffle(keys)
    assert codec.canonical({k: doc[k] for k in keys}) == codec.canonical(doc)


def test_what_orjson_will_not_write_is_written_by_the_standard_library() -> None:
    assert (
        codec.dumps({"big": 2**64, 7: "int key"}) == b'{"big":18446744073709551616,"7":"int key"}'
    )
    assert codec.canonical({"b": [2**70], "a": 1}) == b'{"a":1,"b":[1180591620717411303424]}'
