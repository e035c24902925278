"""Declared field types checked per record (``strict = true``): the reason names the field,
the declared type and what was found."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexers.types import type_error

FIELDS: dict[str, Any] = {
    "amount": "double", "count": "integer", "big": "long", "name": "keyword", "note": "text",
    "paid": "boolean", "at": "date", "customer.id": "keyword", "meta": "object",
}  # fmt: skip
GOOD = {
    "amount": 12.5, "count": 3, "big": 2**40, "name": "ACME", "note": "hi", "paid": False,
    "at": "2026-11-27T10:00:00Z", "customer": {"id": "c-1"}, "meta": {},
}  # fmt: skip


def test_a_record_of_its_declared_types_passes() -> None:
    assert type_error(GOOD, FIELDS) is None
    assert type_error({**GOOD, "amount": 12, "at": 1_795_773_600_000}, FIELDS) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"count": "12"}, "field 'count' declared integer, found string \"12\" (strict)"),
        ({"count": 2**31}, "field 'count' declared integer, found 2147483648, outside the integer"),
        ({"amount": True}, "field 'amount' declared double, found boolean true"),
        ({"amount": float("inf")}, "field 'amount' declared double, found inf, not a finite"),
        ({"paid": "yes"}, "field 'paid' declared boolean, found string \"yes\""),
        ({"at": "yesterday"}, "field 'at' declared date, found string \"yesterday\""),
        ({"at": "2026-11-27 10:00:00"}, "field 'at' declared date, found string"),
        ({"name": 7}, "field 'name' declared keyword, found integer 7"),
        ({"meta": [1]}, "field 'meta' declared object, found array [1]"),
        ({"customer": {"id": 9}}, "field 'customer.id' declared keyword, found integer 9"),
        ({"amount": None}, "field 'amount' declared double is null (strict)"),
        ({"customer": {}}, "field 'customer.id' declared keyword is missing (strict)"),
    ],
)
def test_a_field_of_another_type_names_the_field_the_type_and_what_was_found(
    change: dict[str, Any], reason: str
) -> None:
    found = type_error({**GOOD, **change}, FIELDS)

    assert found is not None and found.startswith(reason), found


def test_an_optional_field_may_be_missing_or_null_but_not_of_another_type() -> None:
    fields = {"note": "text"}

    assert type_error({}, fields, optional=["note"]) is None
    assert type_error({"note": None}, fields, optional=["note"]) is None
    assert type_error({"note": 3}, fields, optional=["note"]) is not None


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=50)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["id", "x"]), inner, max_size=3)),
    max_leaves=6,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from([*GOOD, "x"]), JSON, max_size=8))
def test_any_document_is_accepted_or_refused_with_one_line(doc: dict[str, Any]) -> None:
    reason = type_error(doc, FIELDS)

    assert reason is None or ("\n" not in reason and len(reason) < 200)
    json.dumps(reason)


def test_a_strict_source_sends_a_record_of_another_type_to_the_dead_letters() -> None:
    from fusion.core.config import PipelineConfig
    from indexers.records import RawRecord, SourceRecord, parse

    config = PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id", "strict": True},
            "sources": [
                {"name": "billing", "fields": {"amount": "double", "note": "text"},
                 "optional_fields": ["note"]},
                {"name": "notes", "fields": {"amount": "double"}, "strict": False},
            ],
        }
    )  # fmt: skip
    billing, notes = config.sources
    declared = billing.declared(config.pipeline.strict)

    def parsed(value: bytes, spec_declared: Any) -> Any:
        raw = RawRecord(value, "billing", 0, 9)
        return parse(raw, "billing", "id", 1 << 20, declared=spec_declared)

    letter = parsed(b'{"id": "k1", "amount": "12"}', declared)
    assert not isinstance(letter, SourceRecord)
    assert letter.reason == "field 'amount' declared double, found string \"12\" (strict)"
    assert letter.key == "k1" and letter.offset == 9
    assert isinstance(parsed(b'{"id": "k1", "amount": 12}', declared), SourceRecord)
    # A source's own strict = false wins over the pipeline's; so does no field declared.
    assert notes.declared(config.pipeline.strict) is None
    assert isinstance(parsed(b'{"id": "k1", "amount": "12"}', None), SourceRecord)


def test_an_optional_field_the_source_does_not_declare_is_one_line_at_load() -> None:
    from fusion.core.config import PipelineConfig

    with pytest.raises(ValueError, match="optional_fields names 'nte', which fields does not"):
        PipelineConfig.model_validate(
            {
                "pipeline": {"name": "p", "key_field": "id"},
                "sources": [{"name": "a", "fields": {"note": "text"}, "optional_fields": ["nte"]},
                            {"name": "b"}],
            }
        )  # fmt: skip
