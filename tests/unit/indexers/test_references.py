"""The dimension row a record names: an id by the key's rules, or the reason it names none."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion.core import Reference
from indexers.dimensions.references import Named, references_in, stored_refs
from tests.strategies import JSON_VALUE, TEXT

BRAND = Reference("item", "brand", "brand_id")
NESTED = Reference("item", "tax_status", "tax.id")


def test_an_id_is_a_string_or_an_integer_as_its_text() -> None:
    named = references_in({"brand_id": 17, "tax": {"id": "T-1"}}, [BRAND, NESTED])

    assert named == (Named("brand", "17"), Named("tax_status", "T-1"))
    assert references_in({"brand_id": "17"}, [BRAND]) == (Named("brand", "17"),)
    assert stored_refs(named) == {"brand": "17", "tax_status": "T-1"}


def test_a_record_that_names_no_row_says_why() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "item.brand_id is missing"),
        ({"brand_id": None}, "item.brand_id is null"),
        ({"brand_id": {"id": 1}}, "item.brand_id must be a string or an integer, got {'id': 1}"),
        ({"brand_id": [1, 2]}, "item.brand_id must be a string or an integer, got [1, 2]"),
        ({"brand_id": True}, "must be a string or an integer, got True"),
        ({"brand_id": ""}, "must be 1 to 512 bytes long"),
    ]
    for doc, problem in cases:
        (named,) = references_in(doc, [BRAND])
        assert named.id is None and named.problem is not None
        assert problem in named.problem, (doc, named.problem)
        assert stored_refs([named]) == {}
    (nested,) = references_in({"tax": 5}, [NESTED])
    assert nested.problem == "item.tax.id is missing"


# No deadline: on a machine loaded by a benchmark one example can take longer than
# Hypothesis's 200 ms, which says nothing of the property (the other property tests alike).
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(st.dictionaries(TEXT, JSON_VALUE), st.builds(lambda v: {"brand_id": v}, JSON_VALUE))
)
def test_any_document_names_an_id_or_a_reason_and_never_raises(doc: dict[str, Any]) -> None:
    for named in references_in(doc, [BRAND, NESTED]):
        assert (named.id is None) != (named.problem is None)
        if named.id is not None:
            # It is what the document keeps in fusion.refs: text Elasticsearch takes.
            json.dumps(stored_refs([named])).encode()
