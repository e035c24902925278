"""A key's slots: one per reference from its own sources, one more per reference along a chain."""

from __future__ import annotations

from itertools import pairwise

import pytest

from fusion.core import SourceConfig
from fusion.core.relations import MAX_HOPS, references_of, required_parts, slots_of


def _sources(**references: dict[str, str]) -> list[SourceConfig]:
    """``item`` keyed by the join key; every other name a dimension with its references."""
    sources = [SourceConfig(name="item", references=references.pop("item", {}))]
    sources += [
        SourceConfig(name=name, dimension=True, references=refs, required=name != "country")
        for name, refs in references.items()
    ]
    return sources


def test_a_chain_gives_a_slot_per_reference_along_it() -> None:
    sources = _sources(
        item={"brand": "brand_id"},
        brand={"company": "company_id"},
        company={"country": "country_id"},
        country={},
    )
    slots = slots_of(sources, references_of(sources))
    assert [s.name for s in slots] == ["brand", "brand/company", "brand/company/country"]
    assert [s.parent for s in slots] == [None, "brand", "brand/company"]
    assert {s.dimension for s in slots} == {"brand", "company", "country"}
    assert all(s.referrer == "item" for s in slots)
    # Waited for as its dimension says, once what names it is (country is optional here).
    assert required_parts(sources, slots, True) == ("item", "brand", "brand/company")


def test_a_chain_longer_than_fusion_follows_is_one_line() -> None:
    names = [f"d{n}" for n in range(MAX_HOPS + 1)]
    chain = {a: {b: f"{b}_id"} for a, b in pairwise(names)}
    sources = _sources(item={"d0": "d0_id"}, **chain, **{names[-1]: {}})
    with pytest.raises(ValueError, match=rf"a chain of {MAX_HOPS + 1} references \(item → d0"):
        slots_of(sources, references_of(sources))
    chain.pop("d0")
    shorter = _sources(item={"d1": "d1_id"}, **chain, **{names[-1]: {}})
    slots = slots_of(shorter, references_of(shorter))
    assert max(len(s.hops) for s in slots) == MAX_HOPS


def test_a_dimensions_reference_cannot_take_the_place_of_its_own_field() -> None:
    sources = _sources(item={"brand": "brand_id"}, brand={"company": "company"}, company={})
    with pytest.raises(ValueError, match="the company row goes in the brand row under 'company'"):
        references_of(sources)
    brand = SourceConfig(
        name="brand", dimension=True, fields={"company": "keyword"},
        references={"company": "company_id"},
    )  # fmt: skip
    declared = [sources[0], brand, *sources[2:]]
    with pytest.raises(ValueError, match=r"under 'company', which brand\.fields declares"):
        references_of(declared)
    # Two dimensions may both name their company: each row nests its own.
    sources = _sources(
        item={"brand": "brand_id", "maker": {"dimension": "maker", "field": "maker_id"}},
        brand={"company": "company_id"},
        maker={"company": "company_id"},
        company={},
    )
    names = [s.name for s in slots_of(sources, references_of(sources))]
    assert names == ["brand", "brand/company", "maker", "maker/company"]
