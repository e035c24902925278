"""Dimensions in the pipeline file: what loads, and the one line for what cannot be followed."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.core import Reference
from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError

ITEMS = """
[pipeline]
name = "catalog"
key_field = "item_id"

[[sources]]
name = "item"
key = "after.id"
format = "debezium"
references = { brand = "brand_id", tax_status = "tax_status_id" }

[[sources]]
name = "inventory"
key = "after.item_id"
format = "debezium"

[[sources]]
name = "brand"
dimension = true
key = "after.id"
format = "debezium"

[[sources]]
name = "tax_status"
dimension = true
required = false
key = "after.id"
format = "debezium"
"""


def _load(tmp_path: Path, text: str) -> PipelineConfig:
    path = tmp_path / "pipeline.toml"
    path.write_text(text)
    return PipelineConfig.load(path, env={})


def test_an_item_with_its_brand_and_tax_status(tmp_path: Path) -> None:
    config = _load(tmp_path, ITEMS)

    assert config.dimensions == ("brand", "tax_status")
    assert config.references == (
        Reference("item", "brand", "brand_id"),
        Reference("item", "tax_status", "tax_status_id"),
    )
    assert config.references[0].path == ("brand_id",)
    assert config.references[0].field == "item.references.brand"
    assert config.required_sources == ("item", "inventory", "brand")


def _refuse(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert caught.value.source == str(tmp_path / "pipeline.toml")
    assert problem in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ('brand = "brand_id"', 'brnd = "brand_id"'),
            "item.references.brnd = 'brand_id' names 'brnd', which is no source of this pipeline",
        ),
        (
            ('brand = "brand_id"', 'inventory = "brand_id"'),
            "names 'inventory', which is not a dimension: add dimension = true",
        ),
        (
            (
                'name = "brand"\ndimension = true',
                'name = "brand"\ndimension = true\nreferences = { brand = "parent_id" }',
            ),
            "brand.references.brand = 'parent_id': a dimension cannot reference itself",
        ),
        (
            ('brand = "brand_id", ', ""),
            "dimension 'brand' is referenced by no source: add references",
        ),
        (
            ('name = "inventory"', 'name = "inventory"\nreferences = { brand = "b" }'),
            "dimension 'brand' is referenced by more than one source "
            "(item.references.brand, inventory.references.brand)",
        ),
        (
            ('brand = "brand_id"', 'brand = "record_key.brand_id"'),
            "a reference is a field of the record's value, not its key",
        ),
        (
            ('brand = "brand_id"', 'brand = "a..b"'),
            "names no key",
        ),
    ],
)
def test_a_reference_that_cannot_be_followed_is_one_line(
    tmp_path: Path, change: tuple[str, str], problem: str
) -> None:
    _refuse(tmp_path, ITEMS.replace(*change), problem)


def test_a_cycle_of_dimensions_is_named(tmp_path: Path) -> None:
    text = ITEMS.replace(
        'name = "brand"\ndimension = true',
        'name = "brand"\ndimension = true\nreferences = { tax_status = "tax" }',
    ).replace(
        'name = "tax_status"\ndimension = true',
        'name = "tax_status"\ndimension = true\nreferences = { brand = "brand" }',
    )
    _refuse(tmp_path, text, "in a cycle (brand → tax_status → brand)")


def test_a_chain_of_dimensions_is_not_supported_yet(tmp_path: Path) -> None:
    company = '\n[[sources]]\nname = "company"\ndimension = true\nkey = "after.id"\n'
    text = ITEMS.replace(
        'name = "brand"\ndimension = true',
        'name = "brand"\ndimension = true\nreferences = { company = "company_id" }',
    )
    _refuse(tmp_path, text + company, "a chain, brand → company")


def test_a_pipeline_of_dimensions_alone_has_no_key(tmp_path: Path) -> None:
    text = ITEMS.replace('name = "item"', 'name = "item"\ndimension = true').replace(
        'name = "inventory"', 'name = "inventory"\ndimension = true\nreferences = { item = "x" }'
    )
    # item is then a dimension referencing dimensions: refused, whatever the first fault
    with pytest.raises(ConfigError):
        _load(tmp_path, text)
    only = ITEMS.replace('name = "inventory"', 'name = "inventory"\ndimension = true')
    _refuse(tmp_path, only, "dimension 'inventory' is referenced by no source")


def test_what_does_not_know_dimensions_yet_refuses_them_in_one_line(tmp_path: Path) -> None:
    from fusion.ops.reconcile import reconcile

    config = _load(tmp_path, ITEMS)
    with pytest.raises(ConfigError, match="rows reconcile does not look up yet"):
        reconcile(None, config)  # type: ignore[arg-type]  # refused before Spark is asked


def test_a_copy_with_other_sources_has_references_of_its_own(tmp_path: Path) -> None:
    config = _load(tmp_path, ITEMS)
    assert [r.dimension for r in config.references_from("item")] == ["brand", "tax_status"]

    # A copy with other sources: its own references, not the original's.
    item = config.source("item").model_copy(update={"references": {"brand": "brand_id"}})
    others = [s for s in config.sources if s.name not in ("item", "tax_status")]
    copy = config.model_copy(update={"sources": [item, *others]})
    assert [r.dimension for r in copy.references_from("item")] == ["brand"]
    assert copy.dimensions == ("brand",) and config.dimensions == ("brand", "tax_status")
