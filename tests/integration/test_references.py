"""One table referenced several times: an order's buyer and seller, its payment's payer.

Real Kafka, Elasticsearch and Spark. Orders name two rows of ``user`` (``buyer_id``,
``seller_id``), payments (keyed by the order id) a third (``customer_id`` as
``payer``) and an optional payment method. The enriched order holds each row
under its reference's name; a user's change reaches every order that names it,
through any of the three; references go to null and back on the required
table and on the optional one (the cases Kafka Streams' foreign-key join got
wrong: KAFKA-16394, KAFKA-16407, KAFKA-15303); a user deleted and written again
with other content comes back with it; and no order fires twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fusion.bench.generator import produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from fusion.observe import names
from tests.integration.pipelines import RunningPipeline, drop, enriched_docs, make_config


def _config(settings: Settings, tmp_path: Path) -> PipelineConfig:
    config = make_config(settings, tmp_path, ["order", "payment", "user", "method"])
    data = config.model_dump(mode="python")
    user = {"dimension": "user"}
    data["sources"][0] |= {
        "key": "id",
        "references": {
            "buyer": user | {"field": "buyer_id"},
            "seller": user | {"field": "seller_id"},
        },
    }
    data["sources"][1] |= {
        "key": "order_id",
        "required": False,
        "references": {"payer": user | {"field": "customer_id"}, "method": "method_id"},
    }
    # Users as Debezium's ExtractNewRecordState writes rows: a delete is __deleted = "true".
    data["sources"][2] |= {"key": "id", "dimension": True, "format": "debezium"}
    data["sources"][3] |= {"key": "id", "dimension": True, "required": False}
    return config.model_validate(data)


def test_each_reference_to_a_table_holds_its_row_and_follows_its_changes(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = _config(settings, tmp_path)
    kafka_topics.ensure_topics(config)

    def record(source: str, key: str, row: dict[str, Any]) -> Any:
        return (config.topic_of(config.source(source)), key, json.dumps(row).encode())

    def order(o: str, buyer: str | None, seller: str | None) -> Any:
        return record("order", o, {"id": o, "buyer_id": buyer, "seller_id": seller})

    def payment(o: str, payer: str | None, method: str | None) -> Any:
        return record("payment", o, {"order_id": o, "customer_id": payer, "method_id": method})

    def user(u: str, name: str, deleted: bool = False) -> Any:
        return record("user", u, {"id": u, "name": name, "__deleted": str(deleted).lower()})

    def method(m: str, name: str) -> Any:
        return record("method", m, {"id": m, "name": name})

    def names_held() -> dict[str, tuple[Any, ...]]:
        """Each order's buyer, seller, payer and method names (None: not in the document)."""
        docs = enriched_docs(settings, config)
        parts = ("buyer", "seller", "payer", "method")
        return {k: tuple((d.get(p) or {}).get("name") for p in parts) for k, d in docs.items()}

    try:
        produce(config, [user("u1", "Ann"), user("u2", "Bob"), user("u3", "Cy")])
        produce(config, [method("m1", "card"), method("m2", "cash")])
        orders = [order("o1", "u1", "u2"), order("o2", "u2", "u1"), order("o3", "u1", "u1")]
        orders += [order("o4", "u3", "u2")]
        produce(config, [*orders, payment("o1", "u1", "m1"), payment("o2", "u3", None)])
        with RunningPipeline(spark, config) as running:
            wait = running.wait_for
            wait(
                lambda: (
                    names_held()
                    == {
                        "o1": ("Ann", "Bob", "Ann", "card"),
                        "o2": ("Bob", "Ann", "Cy", None),
                        "o3": ("Ann", "Ann", None, None),
                        "o4": ("Cy", "Bob", None, None),
                    }
                ),
                180,
                "each order with its buyer, seller, payer and method",
            )
            # Ann renamed: every order naming her, by whichever reference, takes it.
            produce(config, [user("u1", "Anna")])
            wait(
                lambda: (
                    names_held()
                    == {
                        "o1": ("Anna", "Bob", "Anna", "card"),
                        "o2": ("Bob", "Anna", "Cy", None),
                        "o3": ("Anna", "Anna", None, None),
                        "o4": ("Cy", "Bob", None, None),
                    }
                ),
                180,
                "Ann's rename through buyer, seller and payer",
            )
            # To null and back: a required reference (o4's seller), an optional one (o1's
            # method); an order naming no seller waits (o5), and fires once it names one.
            produce(config, [order("o4", "u3", None), payment("o1", "u1", None)])
            produce(config, [order("o5", "u2", None)])
            wait(
                lambda: (
                    (h := names_held())["o4"] == ("Cy", None, None, None)
                    and h["o1"] == ("Anna", "Bob", "Anna", None)
                ),
                180,
                "o4 without a seller, o1 without a method",
            )
            assert "o5" not in names_held(), "an order naming no seller waits for one"
            produce(config, [order("o4", "u3", "u3"), payment("o1", "u1", "m2")])
            produce(config, [order("o5", "u2", "u1")])
            wait(
                lambda: (
                    (h := names_held())["o4"] == ("Cy", "Cy", None, None)
                    and h["o1"] == ("Anna", "Bob", "Anna", "cash")
                    and h.get("o5") == ("Bob", "Anna", None, None)
                ),
                180,
                "o4's seller and o1's method back, o5 fired",
            )
            docs = enriched_docs(settings, config)
            assert docs["o5"]["fusion"]["complete"] is True
            # Bob deleted: his orders lose him; written again as another user, they take it.
            produce(config, [user("u2", "", deleted=True)])
            wait(
                lambda: (
                    (h := names_held())["o1"][1] is None
                    and h["o2"][0] is None
                    and h["o5"][0] is None
                ),
                180,
                "Bob gone from o1, o2 and o5",
            )
            assert names_held()["o4"] == ("Cy", "Cy", None, None), "o4 no longer names Bob"
            produce(config, [user("u2", "Bea")])
            wait(
                lambda: (
                    (h := names_held())["o1"][1] == "Bea"
                    and h["o2"][0] == "Bea"
                    and h["o5"][0] == "Bea"
                ),
                180,
                "u2 back as Bea",
            )
            wait(lambda: running.metrics.get(names.COUNTER_FIRED) == 5, 60, "5 fires counted")
            metrics = running.metrics
        assert metrics.get(names.COUNTER_FIRED) == 5, "each order fired once"
        docs = enriched_docs(settings, config)
        assert docs["o2"]["buyer"] == {"id": "u2", "name": "Bea"}
        assert docs["o3"]["fusion"]["complete"] is True, "o3 has no payment, so no payer"
    finally:
        drop(config)
