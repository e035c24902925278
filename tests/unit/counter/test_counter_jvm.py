"""The JVM counter decides as the Python specification (fusion.counter.decisions) does.

The counter query runs ``fusion/jvm/src/fusion/counter/Decisions.java``; the
unit tests of :mod:`fusion.counter.decisions` pin the behaviour down. Here both run over
the same random histories (acks in any order, duplicates, replays of older
versions, malformed and unknown acks, deadlines, optional sources, updates)
and must agree on every decision: state, events (byte for byte), rejections
with their reasons, new key and timers. The JVM runs in a py4j gateway, no Spark.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from fusion.core.events import iso_from_ms
from fusion.counter.decisions import (
    AckSeen,
    Decision,
    Now,
    Rules,
    decide,
    on_deadline,
    restored_timer,
)
from fusion.counter.engine import rules_json
from fusion.counter.key_state import KeyState
from fusion.counter.rules import parse_via

NAMES = ("billing", "insurance", "medicine", "treatment")
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@pytest.fixture(scope="module")
def jvm_json(fusion_jvm: Any) -> Any:
    return fusion_jvm.fusion.counter.Json


def random_rules(rng: random.Random) -> Rules:
    sources = frozenset(rng.sample(NAMES, rng.randint(2, 4)))
    # Some sources are dimensions: their acks are slots, ordered by (version, ref_version);
    # some are children (as the pipeline file allows them: never required, no timeout),
    # to whose slot every ack is a change.
    dimensions = frozenset(s for s in sources if rng.random() < 0.3)
    children = frozenset(s for s in sources - dimensions if rng.random() < 0.2)
    children = children if sources - children else frozenset()
    parts = sources - children
    required = frozenset(s for s in parts if rng.random() < 0.7) or frozenset([min(parts)])
    timeouts = {
        s: None if s in children else rng.choice([None, None, 2_000, 5_000, 9_000]) for s in sources
    }
    on_update = rng.choice(["reenrich", "reenrich", "ignore"])
    on_delete = rng.choice(["reenrich", "delete"])
    # Some histories outlive their state_ttl: 10 s and 25 s are within a history's reach.
    ttl = rng.choice([None, 10_000, 25_000])
    return Rules(sources, required, timeouts, on_update, ttl, on_delete, dimensions, children)


# A chain's rows between, as the counter reads them (the ack's JSON text): lists of several
# lengths (ordered as Python orders tuples), and what is no list of versions.
VIA_TEXTS = (*[None] * 6, "[]", "[1]", "[2]", "[1,3]", "[2,0]", "[0]", " [3] ")
NO_VIA = ("x", "[1.5]", "[true]", "[-1]", "[9223372036854775808]", '"[1]"', "[1] x", "{}")


def random_ack(rng: random.Random, n: int) -> tuple[AckSeen, dict[str, Any]]:
    """An ack as the Python counter reads it, and as the JVM's is asked to (``via`` as text)."""
    # "fusion": fusion reconcile asking a fired key's enrichment again.
    source = rng.choice([*NAMES, *NAMES, "unknown's", None, "fusion"])
    acked_at = iso_from_ms(START + rng.randint(0, 3) * 500)
    via = rng.choice(NO_VIA) if rng.random() < 0.03 else rng.choice(VIA_TEXTS)
    ack = AckSeen(
        source=source,
        acked_at=acked_at if rng.random() < 0.95 else None,
        raw=f"raw-{n}",
        topic="acks",
        partition=rng.randint(0, 3),
        offset=n,
        version=rng.choice([None, 0, 1, 1, 2, 3, 4]),
        digest=rng.choice([None, "a", "b", "b"]),
        deleted=rng.random() < 0.2,  # a source's row deleted (a slot: its row not there)
        ref=rng.choice([None, None, "17", "18"]),
        ref_version=rng.choice([0, 0, 1, 2, 5]),
        via=parse_via(via),
    )
    return ack, ack.__dict__ | {"via": via}


def state_row(state: KeyState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    names = ("seen", "first_ack_at", "started_ms", "fired_at", "expired_at", "deadline_ms")
    return dict(zip(names, state.to_row(), strict=True))


def python_answer(decision: Decision) -> dict[str, Any]:
    return {
        "state": state_row(decision.state),
        "events": [event.model_dump_json() for event in decision.events],
        "rejected": [[ack.raw, reason] for ack, reason in decision.rejected],
        "new_key": decision.new_key,
        "register_timer": decision.register_timer,
        "delete_timer": decision.delete_timer,
    }


def normalized(answer: dict[str, Any]) -> dict[str, Any]:
    # The seen column is JSON in a string; compare what it says, not its escaping.
    if answer["state"] is not None:
        answer["state"] = answer["state"] | {"seen": json.loads(answer["state"]["seen"])}
    return answer


def test_the_jvm_counter_decides_as_the_specification(jvm_json: Any) -> None:
    rng = random.Random(20261123)
    steps = 0
    seen: Counter[str] = Counter()  # what the histories exercised
    for history in range(600):
        rules = random_rules(rng)
        key = "" if history % 50 == 0 else f"K-{history}"
        state: KeyState | None = None
        now_ms = START
        for step in range(rng.randint(1, 10)):
            now_ms += rng.choice([0, 100, 1_000, 3_000, 6_000])
            now = Now(iso_from_ms(now_ms), now_ms)
            request: dict[str, Any] = {
                "key": key,
                "state": state_row(state),
                "rules": json.loads(rules_json(rules)),
                "now_ms": now_ms,
            }
            if state is not None and rng.random() < 0.1:
                # The timer the same state registers when a rebuild restores it.
                timer = restored_timer(state, rules, now)
                expected = Decision(state, register_timer=timer)
                request |= {"op": "restore", "acks": []}
                seen.update(["restored timer"] * (timer is not None))
            elif rng.random() < (0.25 if state is not None else 0.1):
                expected = on_deadline(key, state, rules, now)
                request |= {"op": "deadline", "acks": []}
            else:
                pairs = [
                    random_ack(rng, history * 100 + step * 10 + i) for i in range(rng.randint(1, 5))
                ]
                expected = decide(key, state, [ack for ack, _ in pairs], rules, now)
                request |= {"op": "decide", "acks": [asked for _, asked in pairs]}
            answer = json.loads(jvm_json.decide(json.dumps(request)))
            assert normalized(answer) == normalized(python_answer(expected)), (history, step)
            state = expected.state
            steps += 1
            seen.update(["via kept"] * bool(state and any(s.via for s in state.seen.values())))
            seen.update(json.loads(e).get("kind", "incomplete") for e in answer["events"])
            seen.update(json.loads(e).get("reason", "ready") for e in answer["events"])
            seen.update(["no state"] * (expected.state is None and bool(expected.events)))
            seen.update(
                f"refs in {json.loads(e).get('kind', 'incomplete')}"
                for e in answer["events"]
                if json.loads(e)["refs"]
            )
            seen.update(
                name
                for name in ("new_key", "register_timer", "delete_timer", "rejected")
                if answer[name]
            )
            seen.update(
                "children changed"
                for e in answer["events"]
                if any(json.loads(e)["refs"].get(c) for c in rules.children)
            )
    print(dict(seen))
    assert steps > 1_500
    assert {"refs in ready", "refs in updated", "refs in incomplete"} <= set(seen)
    assert seen["via kept"] > 100, "chains' slots ordered by the rows between"
    assert min(seen[k] for k in ("ready", "updated", "incomplete", "new_key")) >= 20, seen
    assert seen["deleted"] >= 10, seen  # a fired key's enriched document deleted
    assert min(seen[k] for k in ("timeout", "state_ttl", "no state")) >= 20, seen
    assert min(seen[k] for k in ("register_timer", "delete_timer", "rejected")) >= 20, seen
    assert seen["restored timer"] >= 20, seen
    assert seen["children changed"] >= 20, seen
