"""What the counter's decisions take and give: its rules, the batch's time, acks, decisions.

The decisions themselves are :mod:`fusion.counter.decisions`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from fusion.core import IncompleteEvent, PipelineConfig, ReadyEvent
from fusion.counter.key_state import KeyState

Reason = Literal["timeout", "state_ttl"]


@dataclass(frozen=True)
class Rules:
    """What the counter needs from the pipeline config."""

    sources: frozenset[str]
    required: frozenset[str]
    timeouts_ms: Mapping[str, int | None]
    on_update: Literal["reenrich", "ignore"] = "reenrich"
    state_ttl_ms: int | None = None  # required sources without a timeout wait this long
    # A source of a fired key deleted: re-enrich without it, or delete the enriched document.
    on_delete: Literal["reenrich", "delete"] = "reenrich"
    # A key's parts held by reference, by the reference's name: their slots count their
    # changes (docs/dimensions.md).
    dimensions: frozenset[str] = frozenset()
    # Children sources (docs/children.md): a slot too, to which every ack is a change.
    children: frozenset[str] = frozenset()

    # Worked out once: the decisions ask for them per key.
    @cached_property
    def slots(self) -> frozenset[str]:
        """The sources that are no part of a key by themselves: their slots count changes."""
        return self.dimensions | self.children

    @cached_property
    def waited(self) -> frozenset[str]:
        """The sources a key can miss: all but its children, which are never waited for."""
        return self.sources - self.children

    @classmethod
    def of(cls, config: PipelineConfig) -> Rules:
        ttl = config.pipeline.state_ttl
        return cls(
            frozenset(config.parts),
            frozenset(config.required_parts),
            {
                name: None if seconds is None else int(seconds * 1000)
                for name, seconds in config.timeouts.items()
            },
            config.pipeline.on_update,
            None if ttl is None else int(ttl * 1000),
            config.pipeline.on_delete,
            frozenset(config.slots),
            frozenset(config.children),
        )


@dataclass(frozen=True)
class Now:
    """The processing time of the batch: ISO-8601 for events, milliseconds for timers."""

    iso: str
    ms: int


# An ack of this source changes nothing of a key but asks its enrichment again, if it fired
# (`fusion reconcile` with dimensions, docs/dimensions.md): no part is named like Fusion's own
# object in the enriched document.
REENRICH = "fusion"


@dataclass(frozen=True)
class AckSeen:
    """The part of an ack the counter needs, plus where it came from for the DLQ."""

    source: str | None
    acked_at: str | None
    raw: str | None = None
    topic: str = ""
    partition: int = 0
    offset: int = 0
    version: int | None = None
    digest: str | None = None
    deleted: bool = False  # the source's row was deleted (a slot: its row is not there)
    # A dimension's slot ack: the id the referrer names, and that row's version; a chain's,
    # the versions of the rows between (None: not a list of versions, a malformed ack).
    ref: str | None = None
    ref_version: int = 0
    via: tuple[int, ...] | None = ()

    @property
    def order(self) -> tuple[int, tuple[int, ...], int]:
        """The referrer's version, then the rows' along the chain, then the row's."""
        return (self.version or 0, self.via or (), self.ref_version)


def parse_via(text: str | None) -> tuple[int, ...] | None:
    """An ack's ``via`` as the counter reads it (its JSON text): the versions, or None when it
    is no list of whole non-negative numbers. The JVM's twin: ``Json.parseVia``."""
    if text is None:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    if not all(type(v) is int and 0 <= v < 2**63 for v in value):
        return None
    return tuple(value)


Event = ReadyEvent | IncompleteEvent


@dataclass(frozen=True)
class Decision:
    state: KeyState | None
    events: list[Event] = field(default_factory=list)
    rejected: list[tuple[AckSeen, str]] = field(default_factory=list)
    new_key: bool = False
    register_timer: int | None = None
    delete_timer: int | None = None

    @property
    def ready(self) -> ReadyEvent | None:
        ready = (e for e in self.events if isinstance(e, ReadyEvent) and e.kind == "ready")
        return next(ready, None)
