"""The events a counter's decision publishes, built from the key's state: pure."""

from __future__ import annotations

from typing import Literal

from fusion.core import IncompleteEvent, ReadyEvent
from fusion.counter.key_state import KeyState
from fusion.counter.rules import Now, Reason, Rules


def incomplete(
    key: str,
    present: list[str],
    missing: list[str],
    first_ack_at: str | None,
    now: Now,
    versions: dict[str, int],
    reason: Reason,
) -> IncompleteEvent:
    return IncompleteEvent(
        key=key,
        present=present,
        missing=missing,
        first_ack_at=first_ack_at,
        expired_at=now.iso,
        versions=versions,
        reason=reason,
    )


def naming_refs(event: IncompleteEvent, state: KeyState, rules: Rules) -> IncompleteEvent:
    """The event, naming each dimension row the key waited for (by the id its referrer names)."""
    refs = state.refs(rules.slots)
    return event.model_copy(update={"refs": refs}) if refs else event


def ready(
    key: str,
    state: KeyState,
    now: Now,
    kind: Literal["ready", "updated", "deleted"],
    rules: Rules,
) -> ReadyEvent:
    return ReadyEvent(
        key=key,
        sources=state.present,
        first_ack_at=state.first_ack_at,
        fired_at=now.iso,
        kind=kind,
        versions=state.versions,
        deleted=state.deleted,
        refs=state.refs(rules.slots),
    )
