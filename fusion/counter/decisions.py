"""The counter's decisions, as pure functions: which sources of a key are searchable, and fire?

Per key the counter keeps a :class:`KeyState`: the latest version (and content
digest) acked per source, when the first ack came, and whether and when the
key fired or expired. Two events drive it:

- :func:`decide` folds a batch of acks into the state. The key fires (one
  ``ready`` event) as soon as every source is there, or every required one and
  no optional source is still being waited for. After the fire, a source whose
  content changed (a higher version with another digest) or that arrives late
  gives one ``updated`` event per batch (``on_update = "reenrich"``).
- :func:`on_deadline` runs when the key's timer expires: if a required source
  whose timeout passed is still missing, the key is reported ``incomplete``
  once; a required source arriving after that still fires it, once.

A required source without a timeout is waited for until the key's
``state_ttl`` (counted from its first ack, rounded up to :func:`ttl_step_ms`):
then the key is reported incomplete with reason ``state_ttl``, before Spark's
state TTL (longer by :func:`retention_ms`'s margin) drops it. So every key
that enters the counter ends in a ready or an incomplete event, unless every row
it had is deleted first (then it waits for nothing and reports nothing). A timer that
finds no state (the pipeline was stopped past the margin, and the state went
first) still reports the key incomplete, with the sources it had unknown.

Duplicates, any order and replays of older versions change nothing; malformed
acks and acks for sources outside the pipeline are rejected with a reason
(they go to the dead-letter topic) and never count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from fusion.counter.events import incomplete, naming_refs, ready
from fusion.counter.key_state import KeyState, Seen
from fusion.counter.rules import REENRICH, AckSeen, Decision, Event, Now, Reason, Rules

__all__ = ["AckSeen", "Decision", "Event", "Now", "Rules", "decide", "on_deadline"]


def decide(
    key: str, state: KeyState | None, acks: Iterable[AckSeen], rules: Rules, now: Now
) -> Decision:
    """Fold ``acks`` (any order, duplicates allowed) into the key's ``state``."""
    seen = dict(state.seen) if state else {}
    first = state.first_ack_at if state else None
    changed: set[str] = set()
    rejected: list[tuple[AckSeen, str]] = []
    asked = False  # fusion reconcile asks for the key's enrichment again
    for ack in acks:
        if not key or ack.source is None or ack.acked_at is None:
            rejected.append((ack, "malformed ack: key, source and acked_at are required"))
            continue
        if ack.source == REENRICH:
            asked = True
            continue
        if ack.source not in rules.sources:
            reason = f"ack for unknown source {ack.source!r} (not in the pipeline config)"
            rejected.append((ack, reason))
            continue
        if ack.via is None:
            rejected.append((ack, "malformed ack: via must be a list of versions"))
            continue
        first = ack.acked_at if first is None else min(first, ack.acked_at)
        before = seen.get(ack.source)
        if ack.source in rules.children:
            # Each is a change to the key's children, published once (docs/children.md).
            changed.add(ack.source)
            seen[ack.source] = _child_seen(before, ack)
            continue
        if before is not None and ack.order <= before.order:
            continue  # a duplicate, or older than what the key has: changes nothing
        change = _is_change(before, ack)
        if change:
            changed.add(ack.source)
        seen[ack.source] = _seen(before, ack, change, rules)
    if first is None:
        return Decision(state, rejected=rejected)
    if state is None:
        after = KeyState(seen, first, now.ms)
    else:
        after = replace(state, seen=seen, first_ack_at=first)
    if not after.fired:
        decision = _fire_or_wait(key, after, rules, now, new_key=state is None)
        return replace(decision, rejected=rejected)
    return replace(_after_fire(key, after, changed, asked, rules, now), rejected=rejected)


def _has_part(state: KeyState, rules: Rules) -> bool:
    """Whether any of the key's own rows is there: a dimension's row is no part of a key by
    itself (a fan-out may tell a key of its row before the row that names it is counted)."""
    return any(name not in rules.slots for name in state.present)


def _is_change(before: Seen | None, ack: AckSeen) -> bool:
    """A newer ack changes the key unless it repeats what it had: a duplicate record (same
    digest, newer offset), or a delete of a row already gone. A digest-less write is a
    change, and so is a row written again after its delete."""
    if ack.deleted:
        # Kept even when no change, with its version, so that a late older write changes nothing.
        return before is not None and not before.deleted
    same = before is not None and not before.deleted and ack.digest == before.digest
    return ack.digest is None or not same


def _child_seen(before: Seen | None, ack: AckSeen) -> Seen:
    """A children slot after one more change: never deleted (a key's children are there, in
    whatever number), its changes counted."""
    version = max(before.version if before else 0, ack.version or 0)
    changes = (before.changes if before else 0) + 1
    return Seen(version, None, ack.acked_at or "", False, 0, None, changes)


def _seen(before: Seen | None, ack: AckSeen, changed: bool, rules: Rules) -> Seen:
    changes = before.changes if before else 0
    if changed and ack.source in rules.dimensions:
        changes += 1
    digest = None if ack.deleted else ack.digest
    at = ack.acked_at or ""
    via = ack.via or ()
    return Seen(ack.order[0], digest, at, ack.deleted, ack.ref_version, ack.ref, changes, via)


def _after_fire(
    key: str, state: KeyState, changed: set[str], asked: bool, rules: Rules, now: Now
) -> Decision:
    """A fired key's sources changed: an update, or, once a source is gone, what deletes ask;
    or reconcile ``asked``, and nothing changed: an update.

    With every source deleted, or with ``on_delete = "delete"`` and one deleted,
    the key's enriched document goes (a ``deleted`` event) and the key counts as
    not fired: written again and complete, it fires again.
    """
    if not changed and not asked:
        return Decision(state)
    gone = changed & set(state.deleted)
    if gone and (not _has_part(state, rules) or rules.on_delete == "delete"):
        unfired = replace(state, fired_at=None, expired_at=None, deadline_ms=None)
        return Decision(unfired, [ready(key, state, now, "deleted", rules)])
    if gone or rules.on_update == "reenrich" or not changed:
        return Decision(state, [ready(key, state, now, "updated", rules)])
    return Decision(state)


def on_deadline(key: str, state: KeyState | None, rules: Rules, now: Now) -> Decision:
    """The key's timer expired: fire it, report it incomplete, or wait for the next deadline."""
    if state is None:
        # Fired and expired keys leave no timer behind: this key went from the state
        # unreported (stopped past the TTL's margin). Reported, though nothing is known of it.
        missing = sorted(rules.waited)
        return Decision(None, [incomplete(key, [], missing, None, now, {}, "state_ttl")])
    if state.fired or state.expired_at is not None:
        return Decision(state)  # a timer left from before the key fired or expired
    state = replace(state, deadline_ms=None)
    if not _has_part(state, rules):
        return Decision(state)  # every row it had was deleted: nothing to fire or report
    if _complete(state, rules, now):
        return _fire(key, state, rules, now)
    missing = state.missing(rules.waited)
    overdue = [s for s in missing if s in rules.required and _due(state, rules, s) <= now.ms]
    if overdue:
        timed_out = any(rules.timeouts_ms.get(s) is not None for s in overdue)
        expired = replace(state, expired_at=now.iso)
        present, versions = state.present, state.versions
        reason: Reason = "timeout" if timed_out else "state_ttl"
        event = incomplete(key, present, missing, state.first_ack_at, now, versions, reason)
        return Decision(expired, [naming_refs(event, state, rules)])
    return _wait(state, rules, now)


def restored_timer(state: KeyState, rules: Rules, now: Now) -> int | None:
    """The timer a key's rebuilt state registers (:mod:`fusion.counter.rebuild`).

    A key complete and never fired or reported: one already due, so that the
    batch that restores it fires it (Spark fires the timers before the batch's
    time); one waiting: its next deadline; one that fired or expired: none.
    """
    if state.fired or state.expired_at is not None:
        return None
    if _complete(state, rules, now):
        return now.ms - 1
    return _wait(state, rules, now).register_timer


def deadline_of(state: KeyState, rules: Rules) -> int | None:
    """When (epoch ms) the key is reported incomplete if still missing a required source."""
    due = [_due(state, rules, s) for s in state.missing(rules.sources) if s in rules.required]
    finite = [d for d in due if d < _NEVER]
    return min(finite) if finite else None


_NEVER = 2**62


_DAY_MS = 86_400_000


def ttl_step_ms(state_ttl_ms: int) -> int:
    """What a key's TTL deadline is rounded up to: a hundredth of the TTL, at most a minute.

    Rounded, the deadlines of a week of keys share about 10,000 clock buckets
    (:mod:`fusion.counter.clock`) instead of one per second."""
    return max(1, min(60_000, state_ttl_ms // 100))


def retention_ms(state_ttl_ms: int) -> int:
    """Spark's state TTL: ``state_ttl`` plus a margin (as long, at most a day).

    A key's TTL deadline comes before Spark drops its state, so the key is
    reported from what it had, even after the pipeline was stopped for up to
    the margin."""
    return state_ttl_ms + min(state_ttl_ms, _DAY_MS)


def _due(state: KeyState, rules: Rules, source: str) -> int:
    timeout = rules.timeouts_ms.get(source)
    if timeout is not None:
        return state.started_ms + timeout
    if rules.state_ttl_ms is None or source not in rules.required:
        return _NEVER
    step = ttl_step_ms(rules.state_ttl_ms)
    return -(-(state.started_ms + rules.state_ttl_ms) // step) * step


def _complete(state: KeyState, rules: Rules, now: Now) -> bool:
    """Every required source is there and no optional one is still worth waiting for.

    A key without any row (each one it had was deleted) is never complete.
    """
    if not _has_part(state, rules):
        return False
    missing = state.missing(rules.sources)
    if any(s in rules.required for s in missing):
        return False
    # An optional source is waited for until its own timeout (not at all without one).
    return not any(now.ms < _due(state, rules, s) < _NEVER for s in missing)


def _fire_or_wait(key: str, state: KeyState, rules: Rules, now: Now, new_key: bool) -> Decision:
    if _complete(state, rules, now):
        return replace(_fire(key, state, rules, now), new_key=new_key)
    if state.deadline_ms is None and state.expired_at is None:
        return replace(_wait(state, rules, now), new_key=new_key)
    return Decision(state, new_key=new_key)


def _fire(key: str, state: KeyState, rules: Rules, now: Now) -> Decision:
    fired = replace(state, fired_at=now.iso, deadline_ms=None)
    return Decision(fired, [ready(key, fired, now, "ready", rules)], delete_timer=state.deadline_ms)


def _wait(state: KeyState, rules: Rules, now: Now) -> Decision:
    """Register a timer at the earliest deadline still ahead, if there is one."""
    if not _has_part(state, rules):
        return Decision(state)  # no row left to wait with: a row written again starts it
    ahead = [
        d for s in state.missing(rules.sources) if now.ms < (d := _due(state, rules, s)) < _NEVER
    ]
    if not ahead:
        return Decision(state)
    at = min(ahead)
    return Decision(replace(state, deadline_ms=at), register_timer=at)
