"""Children in the counter: they never hold a key back, and each change to them, after the key
fired, re-enriches it once per batch with a higher version (pure; docs/children.md)."""

from __future__ import annotations

from dataclasses import replace

from fusion.core.events import IncompleteEvent, ReadyEvent, RefPart
from fusion.counter.decisions import AckSeen, Decision, Now, Rules, decide, on_deadline
from fusion.counter.key_state import KeyState
from fusion.enricher.document import FoundDoc, next_version
from fusion.enricher.request import EnrichRequest

RULES = Rules(
    sources=frozenset({"orders", "payments", "lines"}),
    required=frozenset({"orders", "payments"}),
    timeouts_ms={"orders": None, "payments": 5_000, "lines": None},
    children=frozenset({"lines"}),
)
NOW = Now("2026-01-01T00:00:01.000000Z", 1_767_225_601_000)
LATER = Now("2026-01-01T00:00:09.000000Z", 1_767_225_609_000)


def part(source: str, version: int, digest: str = "d") -> AckSeen:
    return AckSeen(source=source, acked_at=NOW.iso, version=version, digest=digest)


def line(version: int, left: bool = False) -> AckSeen:
    """A change to the key's lines: a line written (``left``: one moved away or deleted)."""
    return AckSeen(source="lines", acked_at=NOW.iso, version=version, deleted=left)


def _only(decision: Decision) -> ReadyEvent:
    (event,) = decision.events
    assert isinstance(event, ReadyEvent)
    return event


def _fired() -> KeyState:
    state = decide("K", None, [part("orders", 1), part("payments", 1)], RULES, NOW).state
    assert state is not None and state.fired
    return state


def test_an_order_without_lines_fires() -> None:
    event = _only(decide("K", None, [part("orders", 1), part("payments", 2)], RULES, NOW))
    assert event.kind == "ready" and event.refs == {}


def test_lines_alone_never_fire_a_key_and_are_counted_when_it_does() -> None:
    lines = decide("K", None, [line(5), line(6)], RULES, NOW)
    assert lines.events == [] and lines.register_timer is None
    assert on_deadline("K", lines.state, RULES, LATER).events == []  # no order: nothing to say
    event = _only(decide("K", lines.state, [part("orders", 1), part("payments", 1)], RULES, NOW))
    assert event.kind == "ready" and event.refs == {"lines": RefPart(id=None, changes=2)}


def test_every_change_to_the_lines_of_a_fired_key_re_enriches_it_once_per_batch() -> None:
    # Three acks in one batch, in any order of their versions (lines of several partitions):
    # one update, counting all three.
    first = decide("K", _fired(), [line(9), line(3), line(5, left=True)], RULES, NOW)
    event = _only(first)
    assert event.kind == "updated" and event.refs["lines"] == RefPart(id=None, changes=3)
    # A later ack of a lower version is a change all the same: it was published once.
    again = _only(decide("K", first.state, [line(2)], RULES, NOW))
    assert again.refs["lines"].changes == 4
    # Lines never go missing and never delete the key's document, whatever on_delete says.
    assert "lines" not in again.deleted and again.kind == "updated"
    delete_rules = replace(RULES, on_delete="delete")
    moved = _only(decide("K", _fired(), [line(4, left=True)], delete_rules, NOW))
    assert moved.kind == "updated"


def test_each_re_enrichment_has_a_higher_version() -> None:
    found = {"orders": FoundDoc({}, 1), "payments": FoundDoc({}, 1)}
    state, versions = _fired(), []
    for batch in ([line(3)], [line(3, left=True)], [line(8), line(9)]):
        decision = decide("K", state, batch, RULES, NOW)
        event = _only(decision)
        request = EnrichRequest("K", event.kind, event.fired_at, ("u", 0, 0), b"", (), event.refs)
        versions.append(next_version(found, ("lines",), request.changes))
        state = decision.state
    assert versions == sorted(set(versions)), versions


def test_a_missing_part_is_reported_without_the_lines() -> None:
    waiting = decide("K", None, [part("orders", 1), line(4)], RULES, NOW).state
    (event,) = on_deadline("K", waiting, RULES, LATER).events
    assert isinstance(event, IncompleteEvent) and event.missing == ["payments"]
    (unknown,) = on_deadline("K", None, RULES, LATER).events
    assert isinstance(unknown, IncompleteEvent) and "lines" not in unknown.missing
