"""The counter's decision, as a pure function: which sources of a key are searchable, and fire?

Per key the counter keeps a :class:`KeyState`: the distinct sources acked so
far, the earliest ack time and, once fired, when. :func:`decide` folds a
batch of acks into that state and fires exactly when the last missing source
arrives. Duplicates, any order and acks after the fire change nothing;
malformed acks and acks for sources outside the pipeline are rejected with a
reason (they go to the dead-letter topic) and never count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fusion.events import ReadyEvent


@dataclass(frozen=True)
class KeyState:
    seen: frozenset[str]
    first_ack_at: str
    fired_at: str | None = None

    @property
    def fired(self) -> bool:
        return self.fired_at is not None


@dataclass(frozen=True)
class AckSeen:
    """The part of an ack the counter needs, plus where it came from for the DLQ."""

    source: str | None
    acked_at: str | None
    raw: str | None = None
    topic: str = ""
    partition: int = 0
    offset: int = 0


@dataclass(frozen=True)
class Decision:
    state: KeyState | None
    ready: ReadyEvent | None = None
    rejected: list[tuple[AckSeen, str]] = field(default_factory=list)
    new_key: bool = False


def decide(
    key: str,
    state: KeyState | None,
    acks: Iterable[AckSeen],
    sources: frozenset[str],
    now: str,
) -> Decision:
    """Fold ``acks`` into ``state``; fire once all of ``sources`` have been seen.

    Parameters
    ----------
    key : the join key
    state : the key's state before this batch, ``None`` for a new key
    acks : this batch's acks for the key, in any order, duplicates allowed
    sources : every source name of the pipeline
    now : the fire time to stamp on a ready event (ISO-8601 UTC)
    """
    seen = set(state.seen) if state else set()
    first = state.first_ack_at if state else None
    rejected: list[tuple[AckSeen, str]] = []
    for ack in acks:
        if not key or ack.source is None or ack.acked_at is None:
            rejected.append((ack, "malformed ack: key, source and acked_at are required"))
        elif ack.source not in sources:
            rejected.append(
                (ack, f"ack for unknown source {ack.source!r} (not in the pipeline config)")
            )
        else:
            seen.add(ack.source)
            first = ack.acked_at if first is None else min(first, ack.acked_at)
    if first is None:
        return Decision(state, rejected=rejected)
    fired_at = state.fired_at if state else None
    ready = None
    if fired_at is None and seen >= sources:
        fired_at = now
        ready = ReadyEvent(key=key, sources=sorted(sources), first_ack_at=first, fired_at=now)
    after = KeyState(frozenset(seen), first, fired_at)
    return Decision(after, ready, rejected, new_key=state is None)
