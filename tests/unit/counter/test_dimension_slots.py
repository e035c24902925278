"""A dimension's slot in the counter: it waits for the row it names, orders by the referrer's
version first, and counts its changes (pure; docs/dimensions.md)."""

from __future__ import annotations

from dataclasses import replace

from fusion.core.events import IncompleteEvent, ReadyEvent, RefPart
from fusion.counter.decisions import AckSeen, Decision, Now, Rules, decide, on_deadline
from fusion.counter.key_state import KeyState
from fusion.enricher.document import FoundDoc, next_version
from fusion.enricher.request import EnrichRequest

RULES = Rules(
    sources=frozenset({"item", "brand"}),
    required=frozenset({"item", "brand"}),
    timeouts_ms={"item": None, "brand": 5_000},
    dimensions=frozenset({"brand"}),
)
NOW = Now("2026-01-01T00:00:01.000000Z", 1_767_225_601_000)
LATER = Now("2026-01-01T00:00:09.000000Z", 1_767_225_609_000)


def item(version: int, digest: str = "i") -> AckSeen:
    return AckSeen(source="item", acked_at=NOW.iso, version=version, digest=digest)


def slot(
    version: int, ref: str | None, ref_version: int, digest: str = "b", gone: bool = False
) -> AckSeen:
    """K's brand slot, from the item at ``version``: the row ``ref`` at ``ref_version``
    (0: not there; ``gone``: deleted, its tombstone at ``ref_version``)."""
    there = ref is not None and ref_version > 0 and not gone
    return AckSeen(
        source="brand",
        acked_at=NOW.iso,
        version=version,
        digest=f"{ref}:{digest}" if there else None,
        deleted=not there,
        ref=ref,
        ref_version=ref_version,
    )


def _only(decision: Decision) -> ReadyEvent:
    (event,) = decision.events
    assert isinstance(event, ReadyEvent)
    return event


def _fired() -> KeyState:
    state = decide("K", None, [item(10), slot(10, "A", 50)], RULES, NOW).state
    assert state is not None and state.fired
    return state


def test_a_key_fires_once_the_row_its_item_names_is_there() -> None:
    waiting = decide("K", None, [item(10), slot(10, "A", 0)], RULES, NOW)
    assert waiting.events == [] and waiting.register_timer is not None
    fired = decide("K", waiting.state, [slot(10, "A", 50)], RULES, NOW)
    event = _only(fired)
    assert event.kind == "ready" and event.sources == ["brand", "item"]
    assert event.refs == {"brand": RefPart(id="A", version=50, changes=1)}


def test_its_deadline_names_the_row_it_waited_for() -> None:
    waiting = decide("K", None, [item(10), slot(10, "A", 0)], RULES, NOW).state
    assert waiting is not None
    (event,) = on_deadline("K", waiting, RULES, LATER).events
    assert isinstance(event, IncompleteEvent) and event.missing == ["brand"]
    assert event.refs == {"brand": RefPart(id="A", version=0, changes=0)}
    null = decide("K", None, [item(10), slot(10, None, 0)], RULES, NOW).state
    (named_none,) = on_deadline("K", null, RULES, LATER).events
    assert named_none.refs["brand"].id is None  # type: ignore[union-attr]


def test_a_move_to_a_row_written_earlier_wins_and_the_old_row_never_touches_it_again() -> None:
    moved = decide("K", _fired(), [item(20), slot(20, "B", 3)], RULES, NOW)
    event = _only(moved)
    assert event.kind == "updated" and event.refs["brand"] == RefPart(id="B", version=3, changes=2)
    # A's rename, found by a search that saw the item before it moved: older, nothing.
    stale = decide("K", moved.state, [slot(10, "A", 60, digest="renamed")], RULES, NOW)
    assert stale.events == [] and stale.state == moved.state


def test_a_newer_row_of_the_same_id_updates_and_a_duplicate_does_not() -> None:
    renamed = decide("K", _fired(), [slot(10, "A", 61, digest="renamed")], RULES, NOW)
    assert _only(renamed).refs["brand"] == RefPart(id="A", version=61, changes=2)
    again = decide("K", renamed.state, [slot(10, "A", 62, digest="renamed")], RULES, NOW)
    assert again.events == [] and again.state is not None
    assert again.state.seen["brand"].changes == 2  # the same content: no change to count
    replay = decide("K", again.state, [slot(10, "A", 50)], RULES, NOW)
    assert replay.events == [] and replay.state == again.state


def test_a_deleted_row_reenriches_without_it() -> None:
    gone = decide("K", _fired(), [slot(10, "A", 70, gone=True)], RULES, NOW)
    event = _only(gone)
    assert event.kind == "updated" and event.deleted == ["brand"]
    assert event.refs["brand"] == RefPart(id="A", version=70, changes=2)


def test_the_slot_survives_the_state_row() -> None:
    state = decide("K", _fired(), [item(20), slot(20, "B", 3)], RULES, NOW).state
    assert state is not None
    assert KeyState.from_row(state.to_row()) == state
    plain = KeyState.from_row(decide("K", None, [item(10)], RULES, NOW).state.to_row())  # type: ignore[union-attr]
    assert plain.seen["item"].to_list() == [10, "i", NOW.iso]  # sources keep their short entry


def test_a_row_alone_is_no_part_of_a_key_even_when_every_source_is_optional() -> None:
    rules = Rules(
        sources=frozenset({"item", "brand"}),
        required=frozenset(),
        timeouts_ms={"item": None, "brand": None},
        dimensions=frozenset({"brand"}),
    )
    # A fan-out found the item's document before its own ack was counted.
    early = decide("K", None, [slot(10, "A", 50)], rules, NOW)
    assert early.events == [] and early.register_timer is None
    assert _only(decide("K", early.state, [item(10)], rules, NOW)).kind == "ready"
    # Its item deleted, the key keeps only its brand: the enriched document goes.
    gone = AckSeen(source="item", acked_at=NOW.iso, version=11, deleted=True)
    fired = decide("K", early.state, [item(10)], rules, NOW).state
    after = decide("K", fired, [gone], rules, NOW)
    assert _only(after).kind == "deleted"


def _enriched_version(event: ReadyEvent, item_version: int, written: int | None = None) -> int:
    """The version the enricher writes for ``event`` (its item document at ``item_version``;
    ``written``: the version the enriched document has now)."""
    found = {"item": FoundDoc({}, item_version), "brand": FoundDoc({}, 1)}
    wanted = EnrichRequest(event.key, event.kind, NOW.iso, ("t", 0, 0), b"", refs=event.refs)
    return next_version(found, list(RULES.dimensions), wanted.changes, written)


def test_a_key_forgotten_at_its_state_ttl_is_enriched_with_a_higher_version_next_time() -> None:
    state, last, before = _fired(), None, None
    for n, row_version in enumerate((60, 70, 80)):  # brand A renamed three times
        renamed = decide("K", state, [slot(10, "A", row_version, f"r{n}")], RULES, NOW)
        state, last = renamed.state, _only(renamed)
        version = _enriched_version(last, 10, before)
        assert before is None or version > before
        before = version
    assert before is not None
    # Spark's state TTL drops the key (no state), then its item changes once more: the
    # counter counts its changes from zero, the version it gives is lower than the last.
    again = _only(decide("K", None, [item(11, "i2"), slot(11, "A", 80, "r2")], RULES, NOW))
    assert _enriched_version(again, 11) < before
    assert _enriched_version(again, 11, before) > before, "Elasticsearch would refuse it"


def test_a_key_the_counter_remembers_keeps_the_version_its_parts_and_changes_give() -> None:
    """The version written before does not move a remembered key's version: it is already
    above it (only a replay, or a forgotten count, meets one at or above its own)."""
    renamed = _only(decide("K", _fired(), [slot(10, "A", 60, "r0")], RULES, NOW))
    assert _enriched_version(renamed, 10, 3) == _enriched_version(renamed, 10)
    # A replayed batch: the document already has this very version; the rewrite goes above.
    assert _enriched_version(renamed, 10, 11) == 12


CHAIN = Rules(
    sources=frozenset({"item", "brand", "brand/company"}),
    required=frozenset({"item", "brand", "brand/company"}),
    timeouts_ms={"item": None, "brand": None, "brand/company": None},
    dimensions=frozenset({"brand", "brand/company"}),
)


def company(version: int, brand_version: int, ref: str, ref_version: int, digest: str) -> AckSeen:
    """K's ``brand/company`` slot: item at ``version``, its brand at ``brand_version``, the
    company ``ref`` that brand names at ``ref_version``."""
    return AckSeen(
        source="brand/company", acked_at=NOW.iso, version=version, digest=digest,
        ref=ref, ref_version=ref_version, via=(brand_version,),
    )  # fmt: skip


def test_a_chains_slot_orders_by_the_item_then_the_brand_then_the_company() -> None:
    start = [item(10), slot(10, "A", 50), company(10, 50, "C", 7, "c7")]
    state = decide("K", None, start, CHAIN, NOW).state
    assert state is not None and state.fired
    # Brand A moved to company D, written long before C's last change (version 3 < 7).
    moved = decide("K", state, [company(10, 60, "D", 3, "d3")], CHAIN, NOW)
    assert _only(moved).refs["brand/company"] == RefPart(id="D", version=3, changes=2, via=(60,))
    # A late rename of C, found through A as it was before the move: it changes nothing.
    late = decide("K", moved.state, [company(10, 50, "C", 9, "c9")], CHAIN, NOW)
    assert late.events == [] and late.state == moved.state
    # D renamed: the same brand version, a newer row.
    renamed = decide("K", moved.state, [company(10, 60, "D", 4, "d4")], CHAIN, NOW)
    assert _only(renamed).refs["brand/company"] == RefPart(id="D", version=4, changes=3, via=(60,))
    # Kept in the state column, and read back the same.
    assert renamed.state is not None
    entry = renamed.state.seen["brand/company"]
    assert entry.via == (60,) and type(entry).from_list(entry.to_list()) == entry


def test_reconcile_asks_a_fired_key_once_more_and_nothing_else() -> None:
    asked = AckSeen(source="fusion", acked_at=NOW.iso)
    fired = _fired()
    again = decide("K", fired, [asked], RULES, LATER)
    assert _only(again).kind == "updated" and again.state == fired
    assert _only(again).refs["brand"] == RefPart(id="A", version=50, changes=1)
    # Not fired: it waits as it did; unknown: nothing to enrich.
    waiting = decide("K", None, [item(10), slot(10, "A", 0)], RULES, NOW).state
    assert decide("K", waiting, [asked], RULES, LATER).events == []
    assert decide("K", None, [asked], RULES, LATER) == Decision(None)
    # With a change in the same batch, one event as without the ask.
    both = decide("K", fired, [asked, slot(11, "A", 50)], RULES, LATER)
    assert [e.kind for e in both.events] == ["updated"]


def test_a_key_waiting_for_a_chains_row_is_reported_naming_the_slot_and_the_id() -> None:
    """Brand A names company C9, which is not there (or names none: a wrong type at that
    level): the item waits, and its deadline event names the chain's slot and the id."""
    timed = replace(CHAIN, timeouts_ms={"item": None, "brand": None, "brand/company": 5_000})
    missing = AckSeen(source="brand/company", acked_at=NOW.iso, version=10, deleted=True,
                      ref="C9", ref_version=0, via=(50,))  # fmt: skip
    waiting = decide("K", None, [item(10), slot(10, "A", 50), missing], timed, NOW)
    assert waiting.events == [] and waiting.register_timer is not None
    (event,) = on_deadline("K", waiting.state, timed, LATER).events
    assert isinstance(event, IncompleteEvent) and event.missing == ["brand/company"]
    assert event.refs["brand/company"] == RefPart(id="C9", version=0, changes=0, via=(50,))
    # A brand naming no company (null, or a field of the wrong type): no id to name.
    none = replace(missing, ref=None)
    waiting = decide("K", None, [item(10), slot(10, "A", 50), none], timed, NOW)
    (event,) = on_deadline("K", waiting.state, timed, LATER).events
    assert isinstance(event, IncompleteEvent) and event.refs["brand/company"].id is None
