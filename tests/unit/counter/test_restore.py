"""A key's counter state rebuilt from Elasticsearch and the published events (pure)."""

from __future__ import annotations

from dataclasses import replace

from fusion.core import Reference
from fusion.core.events import iso_from_ms
from fusion.counter.decisions import AckSeen, Now, Rules, decide, restored_timer
from fusion.counter.key_state import Seen
from fusion.counter.rebuild.keys import Doc, History, rebuilt_state

NOW = Now(iso_from_ms(1_767_225_600_000), 1_767_225_600_000)
FIRED = "2026-01-01T00:00:00.000000Z"
RULES = Rules(frozenset({"a", "b"}), frozenset({"a", "b"}), {"a": None, "b": 60_000})


def _ack(source: str, version: int, digest: str) -> AckSeen:
    return AckSeen(source, NOW.iso, version=version, digest=digest)


def test_a_key_that_fired_keeps_the_versions_of_its_latest_event() -> None:
    docs = [Doc("a", 5, "da"), Doc("b", 9, "db-new")]
    history = History(fired_at=FIRED, first_ack_at=FIRED, versions={"a": 5, "b": 7})
    state = rebuilt_state(docs, history, NOW)
    assert state is not None and state.fired_at == FIRED and state.fired
    # a: the version the event names is still there, with its digest; b changed since.
    assert state.seen == {"a": Seen(5, "da", FIRED), "b": Seen(7, None, FIRED)}
    assert restored_timer(state, RULES, NOW) is None
    # The replay brings b's version 9 again: an update, not a second fire.
    decision = decide("K", state, [_ack("b", 9, "db-new"), _ack("a", 5, "da")], RULES, NOW)
    assert [e.kind for e in decision.events] == ["updated"]  # type: ignore[union-attr]


def test_a_key_never_fired_is_what_elasticsearch_holds_and_fires_once() -> None:
    docs = [Doc("a", 3, "da"), Doc("b", 4, "db")]
    state = rebuilt_state(docs, None, NOW)
    assert state is not None and not state.fired and state.started_ms == NOW.ms
    # Complete: a timer already due, so the batch that restores it fires it.
    timer = restored_timer(state, RULES, NOW)
    assert timer == NOW.ms - 1
    restored = replace(state, deadline_ms=timer)
    # Its records replayed are duplicates: the first decision fires it, and deletes the timer.
    decision = decide("K", restored, [_ack("a", 3, "da"), _ack("b", 4, "db")], RULES, NOW)
    assert decision.ready is not None and decision.delete_timer == timer
    again = decide("K", decision.state, [_ack("b", 4, "db")], RULES, NOW)
    assert again.events == []


def test_a_key_half_seen_waits_for_its_deadline_counted_from_the_rebuild() -> None:
    state = rebuilt_state([Doc("a", 3, "da")], History(), NOW)
    assert state is not None and set(state.seen) == {"a"}
    assert restored_timer(state, RULES, NOW) == NOW.ms + 60_000
    decision = decide("K", state, [_ack("b", 1, "db")], RULES, NOW)
    assert decision.ready is not None


def test_a_key_reported_incomplete_keeps_its_report_and_fires_late_once() -> None:
    history = History(expired_at=FIRED, first_ack_at=FIRED, versions={"a": 3})
    state = rebuilt_state([Doc("a", 3, "da")], history, NOW)
    assert state is not None and state.expired_at == FIRED and not state.fired
    assert restored_timer(state, RULES, NOW) is None
    decision = decide("K", state, [_ack("a", 3, "da"), _ack("b", 2, "db")], RULES, NOW)
    assert decision.ready is not None


def test_nothing_known_of_a_key_is_no_state() -> None:
    assert rebuilt_state([], None, NOW) is None
    assert rebuilt_state([], History(), NOW) is None


def _gone(source: str, version: int) -> AckSeen:
    return AckSeen(source, NOW.iso, version=version, deleted=True)


def test_a_fired_key_with_a_deleted_row_keeps_it_deleted_and_a_replayed_delete_is_nothing() -> None:
    docs = [Doc("a", 5, "da"), Doc("b", 8, None, deleted=True)]
    history = History(FIRED, None, FIRED, {"a": 5, "b": 8}, deleted=("b",))
    state = rebuilt_state(docs, history, NOW)
    assert state is not None and state.fired and state.deleted == ["b"]
    assert state.present == ["a"]
    assert decide("K", state, [_gone("b", 8)], RULES, NOW).events == []
    back = decide("K", state, [_ack("b", 9, "db")], RULES, NOW)
    assert [e.kind for e in back.events] == ["updated"]  # type: ignore[union-attr]


def test_a_key_whose_rows_all_went_is_restored_with_nothing_to_fire_or_wait_for() -> None:
    docs = [Doc("a", 6, None, deleted=True), Doc("b", 8, None, deleted=True)]
    history = History(None, None, FIRED, {"a": 6, "b": 8}, ("a", "b"), unfired=True)
    state = rebuilt_state(docs, history, NOW)
    assert state is not None and not state.fired and state.present == []
    assert restored_timer(state, RULES, NOW) is None
    assert decide("K", state, [_gone("a", 6), _gone("b", 8)], RULES, NOW).events == []
    back = decide("K", state, [_ack("a", 7, "da"), _ack("b", 9, "db")], RULES, NOW)
    assert back.ready is not None  # written again, complete: it fires again


def test_a_key_unfired_by_a_delete_waits_without_a_deadline_as_the_live_counter_does() -> None:
    docs = [Doc("a", 5, "da"), Doc("b", 8, None, deleted=True)]
    first = "2025-12-31T23:00:00.000000Z"  # an hour before NOW
    history = History(None, None, first, {"a": 5, "b": 8}, ("b",), unfired=True)
    state = rebuilt_state(docs, history, NOW)
    assert state is not None and not state.fired and state.first_ack_at == first
    assert restored_timer(state, RULES, NOW) is None  # b's 60 s from its first ack are past


def test_the_rebuilds_rows_have_arrow_schemas_and_a_tombstone_reads_as_deleted() -> None:
    from fusion.counter.rebuild import plan as rebuild
    from fusion.counter.rebuild import scans as rebuild_scan

    documents = rebuild_scan.arrow(rebuild.DOC_SCHEMA)  # every column type the scan writes
    assert documents.field("deleted").type == "bool"
    assert rebuild_scan.arrow(rebuild.STATE_ROW_SCHEMA).names[0] == "k"
    hit = {"_id": "K", "_version": 7, "_source": {"fusion": {"deleted": True, "key": "K"}}}
    assert rebuild._doc(hit, "a") == {
        "k": "K", "source": "a", "version": 7, "digest": None, "deleted": True,
        "ref": None, "ref_version": 0, "slot": False, "via": [],
    }  # fmt: skip
    assert set(rebuild._doc(hit, "a")) == set(documents.names)
    row = rebuild._doc({"_id": "K", "_version": 3, "_source": {"id": "K"}}, "a")
    assert row["deleted"] is False and row["digest"] is not None


def test_a_row_deleted_in_the_latest_event_stays_deleted_though_written_again_since() -> None:
    # The event says b (version 8) was deleted; Elasticsearch already has b written again
    # (version 9), not yet in an event: its replay is the change that re-enriches the key.
    docs = [Doc("a", 5, "da"), Doc("b", 9, "db")]
    history = History(FIRED, None, FIRED, {"a": 5, "b": 8}, deleted=("b",))
    state = rebuilt_state(docs, history, NOW)
    assert state is not None and state.deleted == ["b"]
    back = decide("K", state, [_ack("b", 9, "db")], RULES, NOW)
    assert [e.kind for e in back.events] == ["updated"]  # type: ignore[union-attr]


def test_a_fired_keys_slot_is_the_row_its_latest_event_names_with_its_changes() -> None:
    from fusion.core.events import RefPart
    from indexers.dimensions import slot_digest

    refs = {"brand": RefPart(id="A", version=50, changes=3)}
    history = History(FIRED, None, FIRED, {"item": 10, "brand": 10}, refs=refs)
    held = Doc("brand", 10, "row-digest", ref="A", ref_version=50, slot=True)
    state = rebuilt_state([Doc("item", 10, "di"), held], history, NOW)
    assert state is not None and state.fired
    brand = state.seen["brand"]
    assert (brand.ref, brand.ref_version, brand.changes) == ("A", 50, 3)
    assert brand.digest == slot_digest("A", "row-digest")  # the row it names is still held
    moved = Doc("brand", 12, "other", ref="B", ref_version=7, slot=True)
    newer = rebuilt_state([Doc("item", 12, "di"), moved], history, NOW)
    assert newer is not None and newer.seen["brand"].digest is None  # the replay brings it


def test_a_key_never_fired_has_the_slots_its_documents_name() -> None:
    from fusion.counter.rebuild import slots as rebuild_slots

    hit = {"_id": "7", "_version": 10, "_source": {"id": 7, "fusion": {"refs": {"brand": "A"}}}}
    references = (Reference("item", "brand", "brand_id"), Reference("item", "tax", "tax_id"))
    brand, tax = rebuild_slots.slot_docs(hit, references)
    assert (brand["ref"], brand["deleted"], tax["ref"], tax["deleted"]) == ("A", False, None, True)
    # As the join fills them in: brand A's row at version 50; no tax named.
    docs = [
        Doc("item", 10, "di"),
        Doc("brand", 10, "row", ref="A", ref_version=50, slot=True),
        Doc("tax", 10, None, deleted=True, slot=True),
    ]
    state = rebuilt_state(docs, None, NOW)
    assert state is not None and state.present == ["brand", "item"]
    assert state.seen["brand"].ref_version == 50 and state.seen["tax"].deleted
    rows = rebuild_slots.row_records(
        [{"_id": "A", "_version": 50, "_source": {"id": "A", "name": "ACME"}}], ["brand"]
    )
    assert [r["dim"] for r in rows] == ["brand"]
    assert rows[0]["row_version"] == 50 and rows[0]["row_digest"] is not None


def test_a_rebuilt_slot_per_reference_to_one_table() -> None:
    """An order naming user 5 as buyer and seller: two slots, each joined to the user's row."""
    from fusion.counter.rebuild import slots as rebuild_slots

    refs = {"buyer": "5", "seller": "5"}
    hit = {"_id": "o1", "_version": 3, "_source": {"id": "o1", "fusion": {"refs": refs}}}
    references = (
        Reference("order", "buyer", "buyer_id", "user"),
        Reference("order", "seller", "seller_id", "user"),
    )
    buyer, seller = rebuild_slots.slot_docs(hit, references)
    assert (buyer["source"], buyer["ref"], seller["source"], seller["ref"]) == (
        "buyer", "5", "seller", "5",
    )  # fmt: skip
    user = {"_id": "5", "_version": 8, "_source": {"id": "5", "name": "Ann"}}
    rows = rebuild_slots.row_records([user], ["buyer", "seller"])
    # The join is by reference and id: each slot finds the row under its own name.
    assert [(r["dim"], r["id"], r["row_version"]) for r in rows] == [
        ("buyer", "5", 8), ("seller", "5", 8),
    ]  # fmt: skip


def test_an_events_refs_read_as_arrow_hands_them_over() -> None:
    from fusion.core.events import RefPart
    from fusion.counter.rebuild import plan as rebuild

    arrow_map = [("brand", {"id": "A", "version": 50, "changes": None})]  # pyarrow's map
    assert rebuild._refs(arrow_map) == {"brand": RefPart(id="A", version=50, changes=0)}
    assert rebuild._refs(None) == {}
    chain = [("brand/company", {"id": "C", "version": 7, "changes": 2, "via": [50]})]
    assert rebuild._refs(chain) == {
        "brand/company": RefPart(id="C", version=7, changes=2, via=(50,))
    }
