"""A source's row deleted: what the counter decides, before and after a key fired (pure)."""

from __future__ import annotations

from dataclasses import replace

from fusion.core.events import ReadyEvent
from fusion.counter.decisions import AckSeen, Now, Rules, decide, on_deadline
from fusion.counter.key_state import KeyState
from tests.unit.counter.test_counter import NOW, RULES, SOURCES, ack, fired_state


def gone(source: str, version: int) -> AckSeen:
    return AckSeen(source=source, acked_at="2026-01-01T00:00:02.000000Z", version=version,
                   deleted=True)  # fmt: skip


def _event(decision: object) -> ReadyEvent:
    (event,) = decision.events  # type: ignore[attr-defined]
    assert isinstance(event, ReadyEvent)
    return event


def test_a_deleted_source_of_a_fired_key_reenriches_it_without_that_source() -> None:
    decision = decide("T-1", fired_state(), [gone("billing", 7)], RULES, NOW)
    event = _event(decision)
    assert event.kind == "updated" and event.deleted == ["billing"]
    assert "billing" not in event.sources and event.versions["billing"] == 7  # the sum grows
    assert decision.state is not None and decision.state.fired  # fired, once
    assert decision.state.missing(SOURCES) == ["billing"]


def test_with_on_delete_delete_the_enriched_document_goes_and_the_key_fires_again() -> None:
    rules = replace(RULES, on_delete="delete")
    decision = decide("T-1", fired_state(rules), [gone("medicine", 7)], rules, NOW)
    assert _event(decision).kind == "deleted"
    state = decision.state
    assert state is not None and not state.fired
    back = decide("T-1", state, [ack("medicine", version=9, digest="d9")], rules, NOW)
    assert back.ready is not None and back.ready.kind == "ready"  # complete again: a fire


def test_every_source_deleted_deletes_the_enriched_document() -> None:
    state = fired_state()
    for n, source in enumerate(sorted(SOURCES)[:-1]):
        state = decide("T-1", state, [gone(source, 7 + n)], RULES, NOW).state  # type: ignore[assignment]
    last = decide("T-1", state, [gone(sorted(SOURCES)[-1], 20)], RULES, NOW)
    assert _event(last).kind == "deleted" and _event(last).sources == []


def test_a_late_older_write_of_a_deleted_row_changes_nothing_a_newer_one_brings_it_back() -> None:
    deleted = decide("T-1", fired_state(), [gone("billing", 7)], RULES, NOW).state
    late = decide("T-1", deleted, [ack("billing", version=6, digest="d6")], RULES, NOW)
    assert late.events == [] and late.state == deleted
    replayed = decide("T-1", deleted, [gone("billing", 7)], RULES, NOW)
    assert replayed.events == [] and replayed.state == deleted  # a replayed delete: nothing
    back = decide("T-1", deleted, [ack("billing", version=8, digest="d2")], RULES, NOW)
    assert _event(back).kind == "updated" and _event(back).deleted == []


def test_a_key_not_yet_fired_waits_for_a_deleted_source_to_come_back() -> None:
    three = [ack(s) for s in sorted(SOURCES)[:3]]
    state = decide("T-1", None, [*three, gone("billing", 5)], RULES, NOW).state
    assert state is not None and not state.fired
    fourth = sorted(SOURCES)[3]
    still = decide("T-1", state, [ack(fourth)], RULES, NOW)
    assert still.ready is None  # billing is gone: not complete
    back = decide("T-1", still.state, [ack("billing", version=6)], RULES, NOW)
    assert back.ready is not None


def test_a_deleted_source_survives_the_states_row_encoding() -> None:
    state = decide("T-1", fired_state(), [gone("billing", 7)], RULES, NOW).state
    assert state is not None
    assert KeyState.from_row(state.to_row()) == state
    assert state.to_row()[0].count("true") == 1


def test_a_key_whose_every_row_went_before_it_fired_waits_for_nothing_and_reports_nothing() -> None:
    # Deadlines everywhere, and nothing required: either would otherwise fire or report it.
    rules = Rules(SOURCES, frozenset({"billing"}), dict.fromkeys(SOURCES, 1_000))
    optional = Rules(SOURCES, frozenset(), dict.fromkeys(SOURCES))
    waiting = decide("T-1", None, [ack("billing")], rules, NOW)
    assert waiting.register_timer is not None
    emptied = decide("T-1", waiting.state, [gone("billing", 5)], rules, NOW)
    assert emptied.events == [] and emptied.register_timer is None
    due = on_deadline("T-1", emptied.state, rules, Now("2026-01-01T00:01:00.000000Z", 70_000))
    assert due.events == [] and due.register_timer is None
    assert due.state is not None and due.state.deadline_ms is None
    only_a_delete = decide("T-2", None, [gone("medicine", 3)], optional, NOW)
    assert only_a_delete.events == [] and only_a_delete.register_timer is None
    back = decide("T-1", due.state, [ack("billing", version=6)], rules, NOW)
    assert back.register_timer is not None  # written again: it waits for the others anew
