"""What the enricher is asked: an event of the ready, updates or incomplete topic, read into
the key to enrich, or a dead letter saying why it cannot be."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from fusion.core import DeadLetter, IncompleteEvent, ReadyEvent, RefPart

EventPosition = tuple[str, int, int]  # topic, partition, offset


@dataclass(frozen=True)
class EnrichRequest:
    """A key to enrich, and the event that asked for it."""

    key: str
    kind: str  # ready, updated, incomplete (a partial document), deleted (no document)
    fired_at: str
    where: EventPosition
    original: bytes
    deleted: tuple[str, ...] = ()  # sources whose rows were deleted: missing, as expected
    # Each dimension slot's row (docs/dimensions.md): looked up by its id, not by the key.
    refs: Mapping[str, RefPart] = field(default_factory=dict)

    def row_ids(self) -> dict[str, str]:
        """The dimension rows to look up: each slot's id, where its row is there."""
        return {
            name: ref.id
            for name, ref in self.refs.items()
            if ref.id is not None and ref.version > 0 and name not in self.deleted
        }

    @property
    def changes(self) -> int:
        """What the slots add to the enriched version: their changes, so it grows with each."""
        return sum(ref.changes for ref in self.refs.values())

    @property
    def partial(self) -> bool:
        return self.kind == "incomplete"


def parse_event(
    incomplete_topic: str, value: bytes | None, where: EventPosition
) -> EnrichRequest | DeadLetter:
    """The key an event of the ready, updates or incomplete topic asks for, or why not."""
    partial = where[0] == incomplete_topic
    model: type[ReadyEvent | IncompleteEvent] = IncompleteEvent if partial else ReadyEvent
    try:
        event = model.model_validate_json(value or b"")
    except ValidationError as exc:
        what = "incomplete" if partial else "ready"
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        reason = f"malformed {what} event: {field + ': ' if field else ''}{error['msg']}"
        return DeadLetter.of(reason, "enricher", None, where, value, _key_of(value))
    if isinstance(event, IncompleteEvent):
        at = event.expired_at
        return EnrichRequest(event.key, "incomplete", at, where, value or b"", refs=event.refs)
    original, deleted = value or b"", tuple(event.deleted)
    return EnrichRequest(
        event.key, event.kind, event.fired_at, where, original, deleted, event.refs
    )


def _key_of(value: bytes | None) -> str | None:
    """The key a malformed event names, if it names one (for its dead letter)."""
    try:
        data = json.loads(value or b"")
    except ValueError:
        return None
    key = data.get("key") if isinstance(data, dict) else None
    return key if isinstance(key, str) else None


def decided_event(kind: str, key: str, value: bytes, where: EventPosition) -> EnrichRequest:
    """What the enrichment needs of an event the counter decided just now (not yet on its
    topic: ``where`` names the topic alone)."""
    data = json.loads(value)
    fired_at = data["expired_at"] if kind == "incomplete" else data["fired_at"]
    refs = {name: RefPart(**ref) for name, ref in (data.get("refs") or {}).items()}
    return EnrichRequest(key, kind, fired_at, where, value, tuple(data.get("deleted") or ()), refs)
