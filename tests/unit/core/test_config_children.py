"""Children in the pipeline file: what loads, and the one line for one that cannot work."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.counter.rules import Rules
from fusion.elastic.indexes import enriched_mapping, source_mapping
from tests.unit.core.test_config_dimensions import _load, _refuse

ORDERS = """
[pipeline]
name = "shop"
key_field = "order_id"

[[sources]]
name = "orders"
format = "debezium"
key = "id"

[[sources]]
name = "payments"
format = "debezium"
key = "order_id"

[[sources]]
name = "order_lines"
format = "debezium"
key = "line_id"
parent = "order_id"
"""


def test_an_order_with_its_lines(tmp_path: Path) -> None:
    config = _load(tmp_path, ORDERS)

    assert config.children == ("order_lines",)
    lines = config.source("order_lines")
    assert (lines.parent, lines.order_by, lines.mapping, lines.max_children) == (
        "order_id", None, "nested", 10_000,
    )  # fmt: skip
    # Children never hold a key back: not required, no timeout, whatever [pipeline] says.
    assert config.required_parts == ("orders", "payments")
    assert config.timeouts["order_lines"] is None
    rules = Rules.of(config)
    assert rules.children == {"order_lines"} and rules.slots == {"order_lines"}
    # Found by their parent, sorted by their order; the array nested in the enriched index.
    own = source_mapping(config, lines)["properties"]["fusion"]["properties"]
    assert own["parent"] == {"type": "keyword"} and own["order"] == {"type": "keyword"}
    assert enriched_mapping(config)["properties"]["order_lines"]["type"] == "nested"
    assert enriched_mapping(config)["properties"]["orders"]["type"] == "object"


def test_an_array_mapped_as_objects_on_request(tmp_path: Path) -> None:
    text = ORDERS.replace('parent = "order_id"', 'parent = "order_id"\nmapping = "object"')
    config = _load(tmp_path, text)
    assert enriched_mapping(config)["properties"]["order_lines"]["type"] == "object"


def test_the_arrays_weigh_on_the_enriched_topics_message_limit(tmp_path: Path) -> None:
    flat = _load(tmp_path, ORDERS.replace('parent = "order_id"', ""))
    config = _load(tmp_path, ORDERS)
    assert config.message_limit == flat.message_limit + config.pipeline.max_children_bytes


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ('key = "line_id"\n', ""),
            "order_lines.key is missing: a children source needs its rows' own key",
        ),
        (
            ('parent = "order_id"', 'parent = "order_id"\ndimension = true'),
            "order_lines.parent: a source is children or a dimension, not both",
        ),
        (
            ('parent = "order_id"', 'parent = "order_id"\nrequired = true'),
            "order_lines.required: children never hold a key back",
        ),
        (
            ('parent = "order_id"', 'parent = "order_id"\ntimeout = "10s"'),
            "order_lines.timeout: children are not waited for",
        ),
        (
            ('parent = "order_id"', 'parent = "line_id"'),
            "order_lines.parent is its key too",
        ),
        (
            ('parent = "order_id"', 'parent = "a..b"'),
            "names no key",
        ),
        (
            ('key = "order_id"\n', 'key = "order_id"\nmax_children = 5\n'),
            "payments.max_children shapes the array of a children source, and 'payments' has "
            "no parent",
        ),
        (
            ('parent = "order_id"', 'parent = "order_id"\nmax_children = 0'),
            "greater than or equal to 1",
        ),
        (
            ('parent = "order_id"', 'parent = "order_id"\nmapping = "flattened"'),
            "'nested' or 'object'",
        ),
    ],
)
def test_a_children_source_that_cannot_work_is_one_line(
    tmp_path: Path, change: tuple[str, str], problem: str
) -> None:
    _refuse(tmp_path, ORDERS.replace(*change), problem)


def test_children_and_dimensions_alone_hold_no_key(tmp_path: Path) -> None:
    text = ORDERS.replace('name = "orders"\nformat = "debezium"\nkey = "id"', (
        'name = "orders"\nformat = "debezium"\nkey = "id"\nparent = "customer_id"'
    )).replace('name = "payments"\nformat = "debezium"\nkey = "order_id"', (
        'name = "payments"\nformat = "debezium"\nkey = "pid"\nparent = "order_id"'
    ))  # fmt: skip
    _refuse(tmp_path, text, "no source is keyed by the join key")
