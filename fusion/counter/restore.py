"""A key's counter state rebuilt from what Elasticsearch and Kafka hold (pure).

Two witnesses, each the truth of its own part (:mod:`fusion.counter.rebuild`
reads them):

- the **events** the counter published (read committed): a key whose ``ready``
  event is on the ready topic fired, whatever Elasticsearch holds; one on the
  incomplete topic was reported. Such a key's sources are the versions of its
  latest event: a newer document, not yet in an event, is then a change the
  replay of the input brings (an ``updated`` event, or a late fire);
- the **source documents** in Elasticsearch, for a key that never fired nor
  was reported: every version indexed, each with its content digest. A
  record the replay indexes again is then a duplicate, and a key that
  Elasticsearch already has complete fires in the batch that restores it
  (:func:`fusion.counter.decisions.restored_timer`).

Deadlines count from the rebuild (what the lost checkpoint knew of a key's
first ack is lost with it): a waiting key gets its whole timeout again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fusion.counter.decisions import Now
from fusion.counter.key_state import KeyState, Seen


@dataclass(frozen=True)
class Doc:
    """A source document of a key in Elasticsearch: its version and content digest."""

    source: str
    version: int
    digest: str | None


@dataclass(frozen=True)
class History:
    """What the counter published of a key: its fire, its report, its latest event's versions."""

    fired_at: str | None = None  # of its (first) ready event
    expired_at: str | None = None  # of its (latest) incomplete event
    first_ack_at: str | None = None
    versions: Mapping[str, int] = field(default_factory=dict)  # of its latest event


def rebuilt_state(docs: Iterable[Doc], history: History | None, now: Now) -> KeyState | None:
    """The key's state as the counter would hold it, or None if nothing is known of it."""
    found = {doc.source: doc for doc in docs}
    if history is not None and (history.fired_at or history.expired_at):
        at = history.fired_at or history.expired_at or now.iso
        seen = {
            source: Seen(version, _digest(found.get(source), version), at)
            for source, version in history.versions.items()
        }
        first = history.first_ack_at or now.iso
        return KeyState(seen, first, now.ms, history.fired_at, history.expired_at)
    if not found:
        return None
    seen = {source: Seen(doc.version, doc.digest, now.iso) for source, doc in found.items()}
    return KeyState(seen, now.iso, now.ms)


def _digest(doc: Doc | None, version: int) -> str | None:
    """The digest of the version an event names, if Elasticsearch still holds that version.

    Unknown (None) otherwise: the next version of that source then counts as a change.
    """
    return doc.digest if doc is not None and doc.version == version else None
