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
    assert config.required_parts == ("item", "inventory", "brand")


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
            "inventory.references.brand and item.references.brand: two references named "
            "'brand'; the enriched document holds one row under each name, so name them apart",
        ),
        (
            ('brand = "brand_id"', 'inventory = { dimension = "brand", field = "brand_id" }'),
            "item.references.inventory: 'inventory' is the name of a source of this pipeline",
        ),
        (
            ('brand = "brand_id"', 'mark = { dimension = "brnd", field = "brand_id" }'),
            "item.references.mark = 'brand_id' names 'brnd', which is no source",
        ),
        (
            ('brand = "brand_id"', '"a.b" = { dimension = "brand", field = "brand_id" }'),
            "item.references.a.b: a reference's name is a field of the enriched document, "
            "without '.'",
        ),
        (
            ('brand = "brand_id"', 'fusion = { dimension = "brand", field = "brand_id" }'),
            "name 'fusion' (a source's or a reference's) is taken",
        ),
        (
            ('brand = "brand_id"', 'brand = { dimension = "brand", field = "brand_id", x = 1 }'),
            "sources.0.references: brand: write the field that names the row (brand = "
            '"<field>"), or brand = { dimension = "<source>", field = "<field>" }; found',
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


ORDERS = """
[pipeline]
name = "shop"
key_field = "order_id"

[[sources]]
name = "order"
key = "id"
references = { buyer = { dimension = "user", field = "buyer_id" }, seller = { dimension = "user", field = "seller_id" } }

[[sources]]
name = "payment"
key = "order_id"
references = { payer = { dimension = "user", field = "customer_id" }, method = "method_id" }

[[sources]]
name = "user"
dimension = true
required = false
timeout = "30s"
key = "id"

[[sources]]
name = "method"
dimension = true
key = "id"
"""  # noqa: E501 (a pipeline file's line, as a user writes it)


def test_one_table_referenced_by_two_fields_and_by_two_sources(tmp_path: Path) -> None:
    config = _load(tmp_path, ORDERS)

    assert config.references == (
        Reference("order", "buyer", "buyer_id", "user"),
        Reference("order", "seller", "seller_id", "user"),
        Reference("payment", "method", "method_id"),
        Reference("payment", "payer", "customer_id", "user"),
    )
    assert config.references[2].dimension == "method"
    assert [r.name for r in config.references_to("user")] == ["buyer", "seller", "payer"]
    # A key's parts: its own sources, then a row per reference, under the reference's name;
    # each reference waits (or not) as its dimension says.
    assert config.parts == ("order", "payment", "buyer", "seller", "method", "payer")
    assert config.required_parts == ("order", "payment", "method")
    assert config.timeouts["buyer"] == config.timeouts["payer"] == 30.0
    assert config.timeouts["method"] is None
    # A payment the key need not have cannot hold it back by the method it would name.
    optional_payment = ORDERS.replace('name = "payment"', 'name = "payment"\nrequired = false')
    optional = _load(tmp_path, optional_payment)
    assert optional.required_parts == ("order",)


def test_a_cycle_of_dimensions_is_named(tmp_path: Path) -> None:
    text = ITEMS.replace(
        'name = "brand"\ndimension = true',
        'name = "brand"\ndimension = true\nreferences = { tax_status = "tax" }',
    ).replace(
        'name = "tax_status"\ndimension = true',
        'name = "tax_status"\ndimension = true\nreferences = { brand = "brand" }',
    )
    _refuse(tmp_path, text, "in a cycle (brand → tax_status → brand)")


def test_a_chain_of_dimensions_gives_a_part_per_hop(tmp_path: Path) -> None:
    company = '\n[[sources]]\nname = "company"\ndimension = true\nkey = "after.id"\n'
    text = ITEMS.replace(
        'name = "brand"\ndimension = true',
        'name = "brand"\ndimension = true\nreferences = { company = "company_id" }',
    )
    config = _load(tmp_path, text + company)
    assert config.parts == ("item", "inventory", "brand", "brand/company", "tax_status")
    assert config.required_parts == ("item", "inventory", "brand", "brand/company")
    assert config.part_source("brand/company").name == "company"


def test_a_pipeline_of_dimensions_alone_has_no_key(tmp_path: Path) -> None:
    text = ITEMS.replace('name = "item"', 'name = "item"\ndimension = true').replace(
        'name = "inventory"', 'name = "inventory"\ndimension = true\nreferences = { item = "x" }'
    )
    # item is then a dimension referencing dimensions: refused, whatever the first fault
    with pytest.raises(ConfigError):
        _load(tmp_path, text)
    only = ITEMS.replace('name = "inventory"', 'name = "inventory"\ndimension = true')
    _refuse(tmp_path, only, "dimension 'inventory' is referenced by no source")


def test_a_copy_with_other_sources_has_references_of_its_own(tmp_path: Path) -> None:
    config = _load(tmp_path, ITEMS)
    assert [r.dimension for r in config.references_from("item")] == ["brand", "tax_status"]

    # A copy with other sources: its own references, not the original's.
    item = config.source("item").model_copy(update={"references": {"brand": "brand_id"}})
    others = [s for s in config.sources if s.name not in ("item", "tax_status")]
    copy = config.model_copy(update={"sources": [item, *others]})
    assert [r.dimension for r in copy.references_from("item")] == ["brand"]
    assert copy.dimensions == ("brand",) and config.dimensions == ("brand", "tax_status")
