from __future__ import annotations

import itertools

from fusion.counter import AckSeen, KeyState, decide

SOURCES = frozenset({"billing", "insurance", "medicine", "treatment"})
NOW = "2026-01-01T00:00:10.000000Z"


def ack(source: str | None, at: str = "2026-01-01T00:00:01.000000Z") -> AckSeen:
    return AckSeen(source=source, acked_at=at)


def run(
    batches: list[list[AckSeen]], sources: frozenset[str] = SOURCES
) -> tuple[int, KeyState | None]:
    state: KeyState | None = None
    fires = 0
    for batch in batches:
        decision = decide("T-1", state, batch, sources, NOW)
        state = decision.state
        fires += decision.ready is not None
    return fires, state


def test_fires_once_when_the_last_source_arrives() -> None:
    fires, state = run([[ack("billing")], [ack("insurance"), ack("medicine")], [ack("treatment")]])

    assert fires == 1
    assert state is not None and state.fired_at == NOW


def test_any_order_and_batching_fires_exactly_once() -> None:
    names = sorted(SOURCES)
    for order in itertools.permutations(names):
        for cut in range(1, len(order)):
            batches = [[ack(s) for s in order[:cut]], [ack(s) for s in order[cut:]]]
            assert run(batches)[0] == 1, (order, cut)


def test_duplicates_never_fire_twice() -> None:
    everything = [ack(s) for s in sorted(SOURCES)]

    fires, _ = run([everything, everything, [ack("billing")], everything])

    assert fires == 1


def test_incomplete_key_does_not_fire() -> None:
    fires, state = run([[ack("billing"), ack("billing"), ack("insurance")], [ack("medicine")]])

    assert fires == 0
    assert state is not None and state.seen == {"billing", "insurance", "medicine"}


def test_ready_event_carries_sorted_sources_and_first_ack_time() -> None:
    decision = decide(
        "T-1",
        None,
        [
            ack("treatment", "2026-01-01T00:00:03Z"),
            ack("billing", "2026-01-01T00:00:02Z"),
            ack("insurance"),
            ack("medicine", "2026-01-01T00:00:05Z"),
        ],
        SOURCES,
        NOW,
    )

    assert decision.ready is not None
    assert decision.ready.sources == ["billing", "insurance", "medicine", "treatment"]
    assert decision.ready.first_ack_at == "2026-01-01T00:00:01.000000Z"
    assert decision.ready.fired_at == NOW
    assert decision.new_key


def test_unknown_and_malformed_acks_are_rejected_and_never_count() -> None:
    decision = decide(
        "T-1", None, [ack("pharmacy"), ack(None), AckSeen("billing", None)], SOURCES, NOW
    )

    reasons = [reason for _, reason in decision.rejected]
    assert len(reasons) == 3
    assert "unknown source 'pharmacy'" in reasons[0]
    assert reasons[1].startswith("malformed ack")
    assert decision.state is None and decision.ready is None


def test_two_sources_work_as_well_as_four() -> None:
    fires, _ = run([[ack("a")], [ack("a"), ack("b")], [ack("b")]], frozenset({"a", "b"}))

    assert fires == 1
