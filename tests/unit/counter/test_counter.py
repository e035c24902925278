from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace

from fusion.core.events import IncompleteEvent, ReadyEvent, iso_from_ms
from fusion.counter.decisions import (
    AckSeen,
    Decision,
    Now,
    Rules,
    deadline_of,
    decide,
    on_deadline,
    retention_ms,
    ttl_step_ms,
)
from fusion.counter.key_state import KeyState

SOURCES = frozenset({"billing", "insurance", "medicine", "treatment"})


def all_required(sources: Iterable[str]) -> Rules:
    """Every source required, no deadline."""
    names = frozenset(sources)
    return Rules(names, names, dict.fromkeys(names))


RULES = all_required(SOURCES)
NOW = Now("2026-01-01T00:00:10.000000Z", 10_000)


def ack(
    source: str | None,
    at: str = "2026-01-01T00:00:01.000000Z",
    version: int = 1,
    digest: str | None = "d1",
) -> AckSeen:
    return AckSeen(source=source, acked_at=at, version=version, digest=digest)


def run(batches: list[list[AckSeen]], rules: Rules = RULES) -> tuple[int, KeyState | None]:
    state: KeyState | None = None
    fires = 0
    for batch in batches:
        decision = decide("T-1", state, batch, rules, NOW)
        state = decision.state
        fires += decision.ready is not None
    return fires, state


def at(ms: int) -> Now:
    return Now(iso_from_ms(ms), ms)


def test_fires_once_when_the_last_source_arrives() -> None:
    fires, state = run([[ack("billing")], [ack("insurance"), ack("medicine")], [ack("treatment")]])

    assert fires == 1
    assert state is not None and state.fired_at == NOW.iso


def test_any_order_and_batching_fires_exactly_once() -> None:
    names = sorted(SOURCES)
    for order in itertools.permutations(names):
        for cut in range(1, len(order)):
            batches = [[ack(s) for s in order[:cut]], [ack(s) for s in order[cut:]]]
            assert run(batches)[0] == 1, (order, cut)


def test_duplicates_never_fire_twice_nor_count_as_updates() -> None:
    everything = [ack(s) for s in sorted(SOURCES)]
    # A re-sent record: a newer offset (version), the same content (digest).
    resent = [ack(s, version=7) for s in sorted(SOURCES)]
    state: KeyState | None = None
    events = []
    for batch in [everything, everything, [ack("billing")], resent, everything]:
        decision = decide("T-1", state, batch, RULES, NOW)
        state = decision.state
        events += decision.events

    assert [e.kind for e in events if isinstance(e, ReadyEvent)] == ["ready"]


def test_incomplete_key_does_not_fire() -> None:
    fires, state = run([[ack("billing"), ack("billing"), ack("insurance")], [ack("medicine")]])

    assert fires == 0
    assert state is not None and set(state.seen) == {"billing", "insurance", "medicine"}


def test_ready_event_carries_sorted_sources_versions_and_first_ack_time() -> None:
    decision = decide(
        "T-1",
        None,
        [
            ack("treatment", "2026-01-01T00:00:03Z", version=4),
            ack("billing", "2026-01-01T00:00:02Z", version=9),
            ack("insurance"),
            ack("medicine", "2026-01-01T00:00:05Z"),
        ],
        RULES,
        NOW,
    )

    assert decision.ready is not None
    assert decision.ready.sources == ["billing", "insurance", "medicine", "treatment"]
    assert decision.ready.versions == {"billing": 9, "insurance": 1, "medicine": 1, "treatment": 4}
    assert decision.ready.first_ack_at == "2026-01-01T00:00:01.000000Z"
    assert decision.ready.fired_at == NOW.iso
    assert decision.new_key


def test_unknown_and_malformed_acks_are_rejected_and_never_count() -> None:
    decision = decide(
        "T-1", None, [ack("pharmacy"), ack(None), AckSeen("billing", None)], RULES, NOW
    )

    reasons = [reason for _, reason in decision.rejected]
    assert len(reasons) == 3
    assert "unknown source 'pharmacy'" in reasons[0]
    assert reasons[1].startswith("malformed ack")
    assert decision.state is None and decision.ready is None


def test_two_sources_work_as_well_as_four() -> None:
    fires, _ = run([[ack("a")], [ack("a"), ack("b")], [ack("b")]], all_required("ab"))

    assert fires == 1


def test_state_survives_its_row_encoding() -> None:
    _, state = run([[ack("billing", version=3, digest="x"), ack("insurance", digest=None)]])
    assert state is not None

    assert KeyState.from_row(state.to_row()) == state


# Updates after the fire


def fired_state(rules: Rules = RULES) -> KeyState:
    decision = decide("T-1", None, [ack(s, version=2) for s in sorted(SOURCES)], rules, NOW)
    assert decision.ready is not None and decision.state is not None
    return decision.state


def test_changed_content_after_the_fire_emits_one_updated_event() -> None:
    state = fired_state()

    changes = [ack("billing", version=5, digest="d2"), ack("billing", version=6)]
    decision = decide("T-1", state, changes, RULES, NOW)

    (event,) = decision.events
    assert isinstance(event, ReadyEvent) and event.kind == "updated"
    assert event.versions["billing"] == 6
    assert decision.ready is None


def test_an_older_version_after_the_fire_is_ignored() -> None:
    state = fired_state()

    decision = decide("T-1", state, [ack("billing", version=1, digest="old")], RULES, NOW)

    assert decision.events == []
    assert decision.state is not None and decision.state.seen["billing"].version == 2


def test_on_update_ignore_records_the_version_but_emits_nothing() -> None:
    rules = replace(RULES, on_update="ignore")
    state = fired_state(rules)

    decision = decide("T-1", state, [ack("billing", version=5, digest="d2")], rules, NOW)

    assert decision.events == []
    assert decision.state is not None and decision.state.seen["billing"].version == 5


# Deadlines

LIFECYCLE = Rules(
    sources=frozenset({"billing", "insurance", "notes"}),
    required=frozenset({"billing", "insurance"}),
    timeouts_ms={"billing": 5_000, "insurance": 5_000, "notes": 5_000},
)


def test_a_new_key_registers_its_deadline_and_fires_before_it_if_complete() -> None:
    first = decide("K", None, [ack("billing")], LIFECYCLE, at(1_000))
    assert first.register_timer == 6_000
    assert first.state is not None and deadline_of(first.state, LIFECYCLE) == 6_000

    done = decide("K", first.state, [ack("insurance"), ack("notes")], LIFECYCLE, at(2_000))

    assert done.ready is not None
    assert done.delete_timer == 6_000


def test_an_optional_source_is_waited_for_until_the_deadline_then_the_key_fires() -> None:
    first = decide("K", None, [ack("billing"), ack("insurance")], LIFECYCLE, at(1_000))
    assert first.ready is None and first.register_timer == 6_000

    expired = on_deadline("K", first.state, LIFECYCLE, at(6_000))

    assert expired.ready is not None and expired.ready.sources == ["billing", "insurance"]


def test_a_missing_required_source_makes_the_key_incomplete_once() -> None:
    first = decide("K", None, [ack("billing")], LIFECYCLE, at(1_000))

    expired = on_deadline("K", first.state, LIFECYCLE, at(6_000))
    again = on_deadline("K", expired.state, LIFECYCLE, at(7_000))

    (event,) = expired.events
    assert isinstance(event, IncompleteEvent)
    assert (event.present, event.missing) == (["billing"], ["insurance", "notes"])
    assert event.expired_at == iso_from_ms(6000)
    assert again.events == []


def test_a_late_required_source_still_fires_the_key_exactly_once() -> None:
    first = decide("K", None, [ack("billing")], LIFECYCLE, at(1_000))
    expired = on_deadline("K", first.state, LIFECYCLE, at(6_000))

    late = decide("K", expired.state, [ack("insurance")], LIFECYCLE, at(9_000))
    later = decide("K", late.state, [ack("insurance"), ack("billing")], LIFECYCLE, at(9_500))

    assert late.ready is not None and late.ready.sources == ["billing", "insurance"]
    assert later.ready is None and later.events == []


def test_a_timer_after_the_fire_does_nothing() -> None:
    done = decide("K", None, [ack("billing"), ack("insurance"), ack("notes")], LIFECYCLE, at(1))

    assert on_deadline("K", done.state, LIFECYCLE, at(6_000)) == Decision(done.state)


def test_a_timer_whose_state_is_gone_still_reports_the_key_incomplete() -> None:
    # Fired and expired keys leave no timer; a timer without state is a key Spark's TTL
    # dropped while the pipeline was stopped past the margin.
    gone = on_deadline("K", None, LIFECYCLE, at(6_000))

    (event,) = gone.events
    assert gone.state is None
    assert isinstance(event, IncompleteEvent) and event.reason == "state_ttl"
    assert (event.present, event.missing) == ([], ["billing", "insurance", "notes"])
    assert event.first_ack_at is None and event.expired_at == iso_from_ms(6_000)


# Keys that never complete

TTL = replace(LIFECYCLE, timeouts_ms=dict.fromkeys(LIFECYCLE.sources), state_ttl_ms=600_000)


def test_a_required_source_without_a_timeout_is_waited_for_until_the_state_ttl() -> None:
    first = decide("K", None, [ack("billing")], TTL, at(1_234))

    assert ttl_step_ms(600_000) == 6_000
    assert first.register_timer == 606_000  # 601,234 ms, rounded up to the step
    assert first.state is not None and deadline_of(first.state, TTL) == first.register_timer
    assert on_deadline("K", first.state, TTL, at(605_999)).events == []

    expired = on_deadline("K", first.state, TTL, at(606_000))

    (event,) = expired.events
    assert isinstance(event, IncompleteEvent) and event.reason == "state_ttl"
    assert (event.present, event.missing) == (["billing"], ["insurance", "notes"])
    assert expired.state is not None and expired.state.expired_at == iso_from_ms(606_000)


def test_a_key_complete_before_its_state_ttl_fires_and_deletes_its_timer() -> None:
    first = decide("K", None, [ack("billing")], TTL, at(0))
    done = decide("K", first.state, [ack("insurance")], TTL, at(5_000))

    assert done.ready is not None and done.delete_timer == first.register_timer


def test_an_optional_source_is_not_waited_for_by_the_state_ttl() -> None:
    done = decide("K", None, [ack("billing"), ack("insurance")], TTL, at(0))

    assert done.ready is not None and done.register_timer is None


def test_a_timeout_that_passes_first_gives_its_own_reason() -> None:
    rules = replace(TTL, timeouts_ms={"billing": None, "insurance": 5_000, "notes": None})

    first = decide("K", None, [ack("notes")], rules, at(0))
    expired = on_deadline("K", first.state, rules, at(5_000))

    assert first.register_timer == 5_000  # insurance's timeout, before billing's state_ttl
    (event,) = expired.events
    assert isinstance(event, IncompleteEvent) and event.reason == "timeout"


def test_spark_keeps_a_state_past_its_ttl_deadline_by_a_margin_of_at_most_a_day() -> None:
    assert retention_ms(6_000) == 12_000
    assert retention_ms(7 * 86_400_000) == 8 * 86_400_000


def test_each_missing_source_is_waited_for_its_own_timeout() -> None:
    rules = replace(LIFECYCLE, timeouts_ms={"billing": 2_000, "insurance": 8_000, "notes": None})

    has_billing = decide("K", None, [ack("billing")], rules, at(0))
    has_notes = decide("K", None, [ack("notes")], rules, at(0))
    expired = on_deadline("K", has_notes.state, rules, at(2_000))

    assert has_billing.register_timer == 8_000  # insurance's timeout; notes has none
    assert has_notes.register_timer == 2_000  # billing's, the earliest
    (event,) = expired.events
    assert isinstance(event, IncompleteEvent) and event.missing == ["billing", "insurance"]


def test_without_a_timeout_nothing_expires_and_optional_sources_are_not_waited_for() -> None:
    rules = replace(LIFECYCLE, timeouts_ms=dict.fromkeys(LIFECYCLE.sources))

    first = decide("K", None, [ack("billing")], rules, at(0))
    done = decide("K", first.state, [ack("insurance")], rules, at(1))
    late_optional = decide("K", done.state, [ack("notes")], rules, at(2))

    assert first.register_timer is None
    assert done.ready is not None
    (update,) = late_optional.events
    assert isinstance(update, ReadyEvent) and update.kind == "updated"
