"""A chain of references: items name their brand, brands their company.

Real Kafka, Elasticsearch and Spark. Each enriched item holds its brand's row
with the brand's company inside it. A company renamed reaches every item of
each of its brands (through the fan-out topic, a hop at a time); a brand
moved to another company takes its items along; an item moved to another
brand takes that brand's company; a company deleted leaves its brands'
items without it and fires none of them again; each item fired once.
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

ITEMS = 9  # items 0-5 of brand A, 6-8 of brand B; A and B both of company C at first


def _config(settings: Settings, tmp_path: Path) -> PipelineConfig:
    config = make_config(settings, tmp_path, ["item", "brand", "company"], fanout_page=4)
    data = config.model_dump(mode="python")
    data["sources"][0] |= {"key": "id", "references": {"brand": "brand_id"}}
    data["sources"][1] |= {
        "key": "id", "dimension": True, "references": {"company": "company_id"},
    }  # fmt: skip
    # Companies as Debezium's ExtractNewRecordState writes rows: a delete is __deleted = "true".
    data["sources"][2] |= {"key": "id", "dimension": True, "format": "debezium"}
    return config.model_validate(data)


def test_items_hold_their_brand_and_its_company_and_follow_both(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    config = _config(settings, tmp_path)
    kafka_topics.ensure_topics(config)

    def record(source: str, key: str, row: dict[str, Any]) -> Any:
        return (config.topic_of(config.source(source)), key, json.dumps(row).encode())

    def item(i: int, brand: str) -> Any:
        return record("item", str(i), {"id": i, "brand_id": brand})

    def brand(b: str, name: str, company: str) -> Any:
        return record("brand", b, {"id": b, "name": name, "company_id": company})

    def company(c: str, name: str, deleted: bool = False) -> Any:
        return record("company", c, {"id": c, "name": name, "__deleted": str(deleted).lower()})

    def held() -> dict[str, tuple[Any, Any]]:
        """Each item's brand name and its company's name (None: not in the document)."""
        out = {}
        for k, doc in enriched_docs(settings, config).items():
            b = doc.get("brand") or {}
            out[k] = (b.get("name"), (b.get("company") or {}).get("name"))
        return out

    def expect(running: RunningPipeline, want: dict[int, tuple[Any, Any]], what: str) -> None:
        running.wait_for(lambda: held() == {str(i): w for i, w in want.items()}, 180, what)

    try:
        produce(config, [company("C", "Corp"), company("D", "Dyne")])
        produce(config, [brand("A", "Acme", "C"), brand("B", "Bolt", "C")])
        produce(config, [item(i, "A" if i < 6 else "B") for i in range(ITEMS)])
        with RunningPipeline(spark, config) as running:
            state = {i: ("Acme" if i < 6 else "Bolt", "Corp") for i in range(ITEMS)}
            expect(running, state, "each item with its brand and company")
            # C renamed: every item of both brands, a page of 4 at a time.
            produce(config, [company("C", "Corpora")])
            state = {i: (b, "Corpora") for i, (b, _) in state.items()}
            expect(running, state, "C's rename through A and B")
            # Brand B moves to D: its items take D; a rename of C then leaves them alone.
            produce(config, [brand("B", "Bolt", "D")])
            state |= {i: ("Bolt", "Dyne") for i in range(6, ITEMS)}
            expect(running, state, "B's items with D")
            produce(config, [company("C", "Corpus")])
            state |= {i: ("Acme", "Corpus") for i in range(6)}
            expect(running, state, "C's second rename, A's items only")
            # Item 0 moves to B, written before A: it takes B and D.
            produce(config, [item(0, "B")])
            state[0] = ("Bolt", "Dyne")
            expect(running, state, "item 0 under B and D")
            # Brand A renamed (same company): its items take the name, the company stays.
            produce(config, [brand("A", "Apex", "C")])
            state |= {i: ("Apex", "Corpus") for i in range(1, 6)}
            expect(running, state, "A's rename")
            # D deleted: B's items keep B, without a company; written again, they take it.
            produce(config, [company("D", "", deleted=True)])
            state |= {i: ("Bolt", None) for i in (0, 6, 7, 8)}
            expect(running, state, "D gone from B's items")
            produce(config, [company("D", "Dynamo")])
            state |= {i: ("Bolt", "Dynamo") for i in (0, 6, 7, 8)}
            expect(running, state, "D back as Dynamo")
            running.wait_for(
                lambda: running.metrics.get(names.COUNTER_FIRED) == ITEMS, 60, "fires counted"
            )
            metrics = running.metrics
        assert metrics.get(names.COUNTER_FIRED) == ITEMS, "each item fired once"
        docs = enriched_docs(settings, config)
        assert docs["3"]["brand"] == {
            "id": "A", "name": "Apex", "company_id": "C", "company": {"id": "C", "name": "Corpus"},
        }  # fmt: skip
        assert docs["3"]["fusion"]["complete"] is True
        assert docs["7"]["fusion"]["versions"].keys() == {"item", "brand", "brand/company"}
    finally:
        drop(config)


def test_reconcile_asks_the_counter_for_the_items_whose_document_is_gone_or_old(
    spark: Any, settings: Settings, tmp_path: Path
) -> None:
    """Enriched documents deleted, and one rebuilt from an older company row, while the pipeline
    runs: `fusion reconcile` asks the counter for those alone; the running pipeline writes
    them again from what Elasticsearch holds, no item firing twice."""
    from fusion.elastic import client as es_client
    from fusion.ops.reconcile import reconcile

    config = _config(settings, tmp_path)
    kafka_topics.ensure_topics(config)

    def record(source: str, key: str, row: dict[str, Any]) -> Any:
        return (config.topic_of(config.source(source)), key, json.dumps(row).encode())

    try:
        produce(config, [record("company", "C", {"id": "C", "name": "Corp", "__deleted": "false"})])
        produce(config, [record("brand", "A", {"id": "A", "name": "Acme", "company_id": "C"})])
        produce(config, [record("item", str(i), {"id": i, "brand_id": "A"}) for i in range(ITEMS)])
        with RunningPipeline(spark, config) as running:
            running.wait_for(
                lambda: len(enriched_docs(settings, config)) == ITEMS, 180, "every item enriched"
            )
            running.wait_for(
                lambda: running.metrics.get(names.COUNTER_FIRED) == ITEMS, 60, "fires counted"
            )
            es = es_client.connect(settings.elasticsearch)
            for key in ("2", "5"):
                es.delete(index=config.enriched_index, id=key, refresh=True)
            # Item 7's document as if built before a rename of C its pipeline never saw.
            old = enriched_docs(settings, config)["7"]
            old["brand"]["company"]["name"] = "Old Corp"
            old["fusion"]["versions"]["brand/company"] -= 1
            es.index(index=config.enriched_index, id="7", document=old, refresh=True)

            report = reconcile(spark, config)

            assert (report.complete, report.up_to_date, report.planned) == (ITEMS, ITEMS - 3, 3)
            assert report.asked and report.enriched == 0
            running.wait_for(
                lambda: (
                    (docs := enriched_docs(settings, config)).keys()
                    == {str(i) for i in range(ITEMS)}
                    and all(d["brand"]["company"]["name"] == "Corp" for d in docs.values())
                ),
                180,
                "items 2, 5 and 7 enriched again",
            )
            # A batch's documents are written before its counts reach the driver.
            metrics = running.metrics
            running.wait_for(
                lambda: metrics.get(names.COUNTER_UPDATED) >= 3, 60, "the three asked counted"
            )
        assert metrics.get(names.COUNTER_FIRED) == ITEMS, "an item asked for is enriched, not fired"
    finally:
        drop(config)
