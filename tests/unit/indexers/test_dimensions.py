"""Slot acks and fan-out requests, built from what the indexer wrote and found (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from acks.fanout import FanoutRequest
from fusion.core import Slot
from fusion.core.config import PipelineConfig
from fusion.elastic.bulk import Confirmed
from fusion.enricher.document import FoundDoc
from fusion.enricher.lookups import _place, _wanted
from fusion.enricher.spec import enrich_spec
from indexers.dimensions import Row, record_content, slot_digest, wanted_rows
from indexers.dimensions.chains import slot_acks
from indexers.dimensions.fanout import newest_per_row, requests_for, worth_a_fanout
from indexers.records import RawRecord, SourceRecord, parse
from indexers.spec import index_spec
from indexers.task import with_refs
from tests.unit.core.test_config_dimensions import ITEMS, ORDERS, _load

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _config(tmp_path: Path) -> PipelineConfig:
    return _load(tmp_path, ITEMS)


def _item(config: PipelineConfig, offset: int, row: dict[str, object]) -> SourceRecord:
    value = json.dumps({"op": "c", "before": None, "after": row}).encode()
    parsed = parse(RawRecord(value, "items", 0, offset), "item", "id", 10_000, "debezium")
    assert isinstance(parsed, SourceRecord)
    return with_refs(parsed, config.references_from("item"))


def _indexes(config: PipelineConfig) -> dict[str, str]:
    """Each source's index: where slot acks say the row is."""
    return dict(index_spec(config, []).indexes)


def _slots(config: PipelineConfig, source: str = "item") -> list[Slot]:
    """The key's slots that start at ``source``'s records."""
    return [slot for slot in config.key_slots if slot.referrer == source]


def _confirmed(record: SourceRecord) -> Confirmed[SourceRecord]:
    return Confirmed(record, "catalog-item", 1, 1, record.version)


def test_an_item_keeps_the_ids_it_names_and_gets_a_slot_ack_per_dimension(tmp_path: Path) -> None:
    config = _config(tmp_path)
    item = _item(config, 9, {"id": 7, "brand_id": 17, "tax_status_id": None})
    assert item.refs == {"brand": "17"}
    assert b'"fusion":{"refs":{"brand":"17"}}' in item.source
    assert wanted_rows([item], config.references_from("item")) == [("brand", "17")]

    rows = {("brand", "17"): Row(42, "d42", 5, 1)}
    brand, tax = slot_acks(_indexes(config), _slots(config), [_confirmed(item)], rows, AT)

    assert (brand.key, brand.source, brand.version) == ("7", "brand", 10)
    assert (brand.ref, brand.ref_version, brand.deleted) == ("17", 42, False)
    assert brand.digest == slot_digest("17", "d42") and brand.digest != slot_digest("18", "d42")
    # The tax status it names none of: an empty slot, which the key waits for if required.
    assert (tax.ref, tax.ref_version, tax.deleted, tax.digest) == (None, 0, True, None)


def test_a_row_not_there_or_deleted_is_an_empty_slot_with_its_id(tmp_path: Path) -> None:
    config = _config(tmp_path)
    item = _item(config, 9, {"id": 7, "brand_id": "17"})
    refs = _slots(config)[:1]
    (missing,) = slot_acks(_indexes(config), refs, [_confirmed(item)], {}, AT)
    assert (missing.ref, missing.ref_version, missing.deleted) == ("17", 0, True)
    tombstone = {("brand", "17"): Row(50, None)}
    (gone,) = slot_acks(_indexes(config), refs, [_confirmed(item)], tombstone, AT)
    assert (gone.ref, gone.ref_version, gone.deleted) == ("17", 50, True)


def test_a_rows_newest_request_wins_and_a_continued_one_beats_its_start() -> None:
    where = ("catalog.fanout", 0, 1)
    first = FanoutRequest(dimension="brand", id="17", version=5, digest="a", requested_at=AT)
    further = first.model_copy(update={"after": ["k9"], "keys": 10})
    newer = first.model_copy(update={"version": 8, "digest": "b"})
    other = first.model_copy(update={"id": "18"})
    picked = newest_per_row([(first, where), (further, where), (other, where)])
    assert [r for r, _ in picked] == [further, other]
    assert [r for r, _ in newest_per_row([(further, where), (newer, where)])] == [newer]
    assert FanoutRequest.from_bytes(further.to_bytes()) == further


def test_a_written_row_asks_for_its_fan_out(tmp_path: Path) -> None:
    parsed = parse(RawRecord(b'{"id": "17", "name": "ACME"}', "brands", 0, 3), "brand", "id", 99)
    assert isinstance(parsed, SourceRecord)
    ((request, row),) = requests_for("brand", ["brand"], [_confirmed(parsed)], AT)
    assert (request.dimension, request.id, request.version) == ("brand", "17", 4)
    assert request.digest == parsed.digest and request.after is None
    assert request.kafka_key == "brand/17" and row.record is parsed
    assert request.through == "brand"
    # Published before references had names of their own: the one named like the dimension.
    old = b'{"dimension":"brand","id":"17","version":4,"digest":null,"requested_at":"2026-01-01T00:00:00Z"}'  # noqa: E501
    assert FanoutRequest.from_bytes(old).through == "brand"


def test_a_row_of_a_table_referenced_thrice_asks_through_each_reference(tmp_path: Path) -> None:
    config = _load(tmp_path, ORDERS)
    parsed = parse(RawRecord(b'{"id": "5", "name": "Ann"}', "user", 0, 3), "user", "id", 99)
    assert isinstance(parsed, SourceRecord)
    naming = index_spec(config, ["user"]).naming["user"]
    assert naming == ("buyer", "seller", "payer")
    asked = requests_for("user", naming, [_confirmed(parsed)], AT)
    assert [(r.through, r.id, r.kafka_key) for r, _ in asked] == [
        ("buyer", "5", "user/5"), ("seller", "5", "user/5"), ("payer", "5", "user/5"),
    ]  # fmt: skip
    # Each reference's request is its own: the newest of one does not stand for another.
    where = ("shop.fanout", 0, 1)
    newer = asked[0][0].model_copy(update={"version": 9})
    picked = newest_per_row([(r, where) for r, _ in asked] + [(newer, where)])
    assert sorted((r.through, r.version) for r, _ in picked) == [
        ("buyer", 9), ("payer", 4), ("seller", 4),
    ]  # fmt: skip


def test_an_order_gets_a_slot_per_reference_to_one_table(tmp_path: Path) -> None:
    config = _load(tmp_path, ORDERS)
    value = b'{"id": "o1", "buyer_id": 5, "seller_id": "5", "total": 3}'
    parsed = parse(RawRecord(value, "order", 0, 1), "order", "id", 99)
    assert isinstance(parsed, SourceRecord)
    refs = config.references_from("order")
    order = with_refs(parsed, refs)
    assert order.refs == {"buyer": "5", "seller": "5"}
    # One row, named twice: looked up once.
    assert wanted_rows([order], refs) == [("user", "5")]
    rows = {("user", "5"): Row(7, "u7")}
    buyer, seller = slot_acks(
        _indexes(config), _slots(config, "order"), [_confirmed(order)], rows, AT
    )
    assert (buyer.source, buyer.index, buyer.ref, buyer.ref_version) == (
        "buyer", "shop-user", "5", 7,
    )  # fmt: skip
    assert (seller.source, seller.index, seller.ref) == ("seller", "shop-user", "5")


def test_the_enricher_fetches_each_named_row_once_and_gives_it_to_every_key(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    rows = {"7": {"brand": "17"}, "8": {"brand": "17"}, "9": {}}
    wanted = _wanted(enrich_spec(config), ["7", "8", "9"], rows)
    assert [(i, s.name) for i, s in wanted if s.dimension] == [("17", "brand")]
    assert len(wanted) == 3 * 2 + 1  # each key's item and inventory, brand 17 once
    fetched = {
        "7": {"item": FoundDoc({"id": 7}, 10)},
        "17": {"brand": FoundDoc({"name": "ACME"}, 42), "item": FoundDoc({"id": 17}, 3)},
    }
    found = _place(enrich_spec(config), ["7", "8", "17"], rows | {"17": {}}, fetched)
    assert found["7"]["brand"].source == {"name": "ACME"} and found["8"]["brand"].version == 42
    assert "brand" not in found["17"], "a row is no part of a key of the same text"
    assert found["17"]["item"].version == 3


def test_a_row_written_again_unchanged_asks_for_no_fan_out() -> None:
    parsed = parse(RawRecord(b'{"id": "17", "name": "ACME"}', "brands", 0, 9), "brand", "id", 99)
    assert isinstance(parsed, SourceRecord)
    item = _confirmed(parsed)  # version 10, this batch from offset 8
    same, other = Row(4, parsed.digest), Row(4, "another")
    assert worth_a_fanout(item, None, 8)  # a first write
    assert not worth_a_fanout(item, same, 8)  # sent again as it was
    assert worth_a_fanout(item, other, 8) and worth_a_fanout(item, Row(4, None), 8)  # changed
    assert worth_a_fanout(item, Row(10, parsed.digest), 8)  # this write replayed: ask again
    gone = _confirmed(SourceRecord("17", {}, "brands", 0, 11, b"", None, deleted=True))
    assert worth_a_fanout(gone, same, 8) and not worth_a_fanout(gone, Row(4, None), 8)


def test_a_row_an_uncommitted_attempt_of_the_batch_wrote_asks_again() -> None:
    """A lost checkpoint's replay (offsets 2 to 9) finds the row at version 4 with this write's
    content: an attempt that did not commit wrote it (offset 3), and its fan-out may be lost."""
    parsed = parse(RawRecord(b'{"id": "17", "name": "ACME"}', "brands", 0, 9), "brand", "id", 99)
    assert isinstance(parsed, SourceRecord)
    item = _confirmed(parsed)
    assert worth_a_fanout(item, Row(4, parsed.digest), 2)
    assert not worth_a_fanout(item, Row(4, parsed.digest), 4), "offset 3 was an earlier batch's"
    gone = _confirmed(SourceRecord("17", {}, "brands", 0, 11, b"", None, deleted=True))
    assert worth_a_fanout(gone, Row(4, None), 3) and not worth_a_fanout(gone, Row(4, None), 4)


def test_a_stored_row_has_its_records_digest_without_what_fusion_kept_in_it() -> None:
    stored = {"name": "ACME", "fusion": {"key": "17", "refs": {"company": "3"}}}
    assert record_content(stored) == {"name": "ACME"}
    own = {"name": "ACME", "fusion": {"note": 1, "key": "17"}}
    assert record_content(own) == {"name": "ACME", "fusion": {"note": 1}}
    assert record_content({"a": 1}) == {"a": 1}


def test_the_enricher_puts_one_row_under_each_reference_naming_it(tmp_path: Path) -> None:
    from fusion.counter.rules import Rules

    config = _load(tmp_path, ORDERS)
    spec = enrich_spec(config)
    assert spec.dimensions == ("buyer", "seller", "method", "payer")
    assert {s.index for s in spec.sources if s.dimension} == {"shop-user", "shop-method"}
    rows = {"o1": {"buyer": "5", "seller": "6", "payer": "5"}}
    wanted = _wanted(spec, ["o1"], rows)
    assert sorted((i, s.name, s.index) for i, s in wanted if s.dimension) == [
        ("5", "buyer", "shop-user"), ("5", "payer", "shop-user"), ("6", "seller", "shop-user"),
    ]  # fmt: skip
    fetched = {
        "o1": {"order": FoundDoc({"id": "o1"}, 2)},
        "5": {"buyer": FoundDoc({"name": "Ann"}, 7), "payer": FoundDoc({"name": "Ann"}, 7)},
        "6": {"seller": FoundDoc({"name": "Bob"}, 4)},
    }
    found = _place(spec, ["o1"], rows, fetched)["o1"]
    assert {n: d.source for n, d in found.items()} == {
        "order": {"id": "o1"}, "buyer": {"name": "Ann"}, "seller": {"name": "Bob"},
        "payer": {"name": "Ann"},
    }  # fmt: skip
    # The counter counts each reference as a slot of its own, waited for as its table says.
    rules = Rules.of(config)
    assert rules.dimensions == {"buyer", "seller", "method", "payer"}
    assert rules.sources == {"order", "payment", "buyer", "seller", "method", "payer"}
    assert "user" not in rules.sources and rules.required == {"order", "payment", "method"}
