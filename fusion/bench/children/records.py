"""The children benchmark's pipeline and its records: orders, and lines naming them."""

from __future__ import annotations

import json
from typing import Any

from fusion.core import PipelineConfig, Settings

Record = tuple[str, str, bytes]
BIG = "BIG"  # the order of many lines


def children_config(
    settings: Settings, tag: str, pipeline: tuple[tuple[str, str], ...] = ()
) -> PipelineConfig:
    """The orders-and-lines pipeline, with ``pipeline``'s ``[pipeline]`` options (``--set``)."""
    name = f"bench-children-{tag}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {"name": name, "key_field": "order_id", **dict(pipeline)}
    data["sources"] = [
        {"name": "orders", "topic": f"{name}.orders", "key": "id"},
        {"name": "lines", "topic": f"{name}.lines", "key": "line_id", "parent": "order_id",
         "fields": {"qty": "long"}},
    ]  # fmt: skip
    return PipelineConfig.model_validate(data)


def order_key(prefix: str, n: int) -> str:
    return f"{prefix}-{n:07d}"


def line_row(order: str, j: int, qty: int) -> dict[str, Any]:
    return {"line_id": f"{order}-{j:05d}", "order_id": order, "sku": f"S{j % 97}", "qty": qty,
            "price": round(1 + j % 50 * 0.5, 2)}  # fmt: skip


def orders_of(
    config: PipelineConfig, prefix: str, orders: int, lines: int, qty: int = 1
) -> list[Record]:
    """``orders`` orders of ``lines`` lines each: the lines first, then the orders."""
    topic = {s.name: config.topic_of(s) for s in config.sources}
    keys = [order_key(prefix, n) for n in range(orders)]
    out = [
        (topic["lines"], row["line_id"], json.dumps(row).encode())
        for key in keys
        for row in (line_row(key, j, qty) for j in range(lines))
    ]
    out += [(topic["orders"], key, json.dumps(order_row(key)).encode()) for key in keys]
    return out


def order_row(key: str) -> dict[str, Any]:
    return {"id": key, "buyer": f"buyer {key[-3:]}", "total": len(key)}
