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
first ack is lost with it): a waiting key gets its whole timeout again. A key
whose rows were deleted after it fired (its latest event ``deleted``) waits, as
the live counter does, without a deadline for a row written again: its
deadlines count from its first ack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from fusion.core import RefPart
from fusion.counter import KeyState, Now, Seen
from indexers import slot_digest


@dataclass(frozen=True)
class Doc:
    """A source document of a key in Elasticsearch: its version and content digest.

    A dimension's slot (``ref`` set, or ``slot``): the referrer document's version, the id
    it names, and that row's version and content digest (``deleted``: the row is not there).
    """

    source: str
    version: int
    digest: str | None
    deleted: bool = False  # the tombstone of a deleted row
    ref: str | None = None
    ref_version: int = 0
    slot: bool = False
    via: tuple[int, ...] = ()  # a chain's: the versions of the rows between

    def seen(self, at: str) -> Seen:
        if not self.slot:
            return Seen(self.version, self.digest, at, self.deleted)
        there = not self.deleted and self.ref is not None and self.digest is not None
        digest = slot_digest(self.ref, self.digest) if there and self.ref and self.digest else None
        return Seen(self.version, digest, at, not there, self.ref_version, self.ref, 0, self.via)


@dataclass(frozen=True)
class History:
    """What the counter published of a key: its fire, its report, its latest event's versions."""

    fired_at: str | None = None  # of its (first) ready event
    expired_at: str | None = None  # of its (latest) incomplete event
    first_ack_at: str | None = None
    versions: Mapping[str, int] = field(default_factory=dict)  # of its latest event
    deleted: tuple[str, ...] = ()  # of its latest event: sources whose rows were deleted
    unfired: bool = False  # its rows deleted after it fired: its enriched document went
    refs: Mapping[str, RefPart] = field(default_factory=dict)  # of its latest event: its slots


def rebuilt_state(docs: Iterable[Doc], history: History | None, now: Now) -> KeyState | None:
    """The key's state as the counter would hold it, or None if nothing is known of it."""
    found = {doc.source: doc for doc in docs}
    if history is not None and (history.fired_at or history.expired_at):
        at = history.fired_at or history.expired_at or now.iso
        seen = {
            source: _from_event(source, version, history, found.get(source), at)
            for source, version in history.versions.items()
        }
        first = history.first_ack_at or now.iso
        return KeyState(seen, first, now.ms, history.fired_at, history.expired_at)
    if not found:
        return None
    seen = {s: doc.seen(now.iso) for s, doc in found.items()}
    if history is not None and history.unfired and history.first_ack_at:
        # As the live counter does: its deadlines count from its first ack, long past.
        started = _ms(history.first_ack_at)
        return KeyState(seen, history.first_ack_at, started)
    return KeyState(seen, now.iso, now.ms)


def _from_event(source: str, version: int, history: History, doc: Doc | None, at: str) -> Seen:
    """A source's entry as the key's latest event had it; a slot's with its row and changes."""
    ref = history.refs.get(source)
    if ref is None:
        gone = source in history.deleted or _deleted(doc, version)
        return Seen(version, _digest(doc, version), at, gone)
    # The slot's digest, if Elasticsearch still holds the row the event names.
    held = doc is not None and (doc.version, doc.via, doc.ref_version, doc.ref) == (
        version, ref.via, ref.version, ref.id,
    )  # fmt: skip
    digest = doc.seen(at).digest if held and doc is not None else None
    gone = source in history.deleted
    return Seen(version, digest, at, gone, ref.version, ref.id, ref.changes, ref.via)


def _digest(doc: Doc | None, version: int) -> str | None:
    """The digest of the version an event names, if Elasticsearch still holds that version.

    Unknown (None) otherwise: the next version of that source then counts as a change.
    """
    return doc.digest if doc is not None and doc.version == version else None


def _deleted(doc: Doc | None, version: int) -> bool:
    """Whether Elasticsearch holds the version an event names as a deleted row's tombstone."""
    return doc is not None and doc.version == version and doc.deleted


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)
