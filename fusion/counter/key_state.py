"""A key's state in the counter, and its Spark columns: what both engines keep per key.

The JVM engine's twin is ``fusion.counter.KeyState``; the decisions that
change it are :mod:`fusion.counter.decisions`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fusion.core import RefPart


@dataclass(frozen=True)
class Seen:
    """The newest ack of one source: its document's version, content digest and ack time.

    ``deleted``: that ack said the source's row was deleted (its version orders it
    against a late older write, which then changes nothing).

    A dimension's slot (docs/dimensions.md) also keeps the id its referrer names
    (``ref``), that row's version (``ref_version``, 0: no row) and how often the
    slot changed (``changes``); acks are ordered by ``(version, via,
    ref_version)``, the referrer's version first, then a chain's rows between
    (``via``), then the row's.
    """

    version: int
    digest: str | None
    acked_at: str = ""
    deleted: bool = False
    ref_version: int = 0
    ref: str | None = None
    changes: int = 0
    via: tuple[int, ...] = ()

    @property
    def order(self) -> tuple[int, tuple[int, ...], int]:
        return (self.version, self.via, self.ref_version)

    def to_list(self) -> list[object]:
        """Its entry in the ``seen`` column: a slot's fields only where there is a slot, a
        chain's rows between only in a chain's."""
        head: list[object] = [self.version, self.digest, self.acked_at]
        if self.ref_version or self.ref is not None or self.changes or self.via:
            slot = [*head, self.deleted, self.ref_version, self.ref, self.changes]
            return [*slot, list(self.via)] if self.via else slot
        return [*head, True] if self.deleted else head

    @classmethod
    def from_list(cls, entry: list[Any]) -> Seen:
        version, digest, at, *rest = entry
        deleted = bool(rest and rest[0])
        if len(rest) < 4:
            return cls(int(version), digest, at, deleted)
        ref_version, ref, changes = rest[1:4]
        via = tuple(int(v) for v in rest[4]) if len(rest) > 4 else ()
        return cls(int(version), digest, at, deleted, int(ref_version), ref, int(changes), via)


@dataclass(frozen=True)
class KeyState:
    seen: Mapping[str, Seen]
    first_ack_at: str
    started_ms: int  # processing time of the first ack; deadlines count from here
    fired_at: str | None = None
    expired_at: str | None = None
    deadline_ms: int | None = None  # the key's registered timer, if any

    @property
    def fired(self) -> bool:
        return self.fired_at is not None

    @property
    def versions(self) -> dict[str, int]:
        """Every source's newest version, a deleted one's too: the enriched version, their
        sum, only grows."""
        return {name: self.seen[name].version for name in sorted(self.seen)}

    @property
    def present(self) -> list[str]:
        """The sources whose document is there (acked, and not deleted since), sorted."""
        return sorted(name for name, s in self.seen.items() if not s.deleted)

    @property
    def deleted(self) -> list[str]:
        """The sources whose document was deleted (and not written again since), sorted."""
        return sorted(name for name, s in self.seen.items() if s.deleted)

    def missing(self, sources: Iterable[str]) -> list[str]:
        """Of ``sources``, those without a document now (never acked, or deleted), sorted."""
        return sorted(set(sources) - set(self.present))

    def refs(self, dimensions: Iterable[str]) -> dict[str, RefPart]:
        """Each dimension slot the key has: the row it names, for the enricher to look up."""
        return {
            name: RefPart(id=s.ref, version=s.ref_version, changes=s.changes, via=s.via)
            for name in sorted(dimensions)
            if (s := self.seen.get(name)) is not None
        }

    def to_row(self) -> tuple[str, str, int, str | None, str | None, int | None]:
        seen = {name: s.to_list() for name, s in sorted(self.seen.items())}
        return (
            json.dumps(seen, separators=(",", ":")),
            self.first_ack_at,
            self.started_ms,
            self.fired_at,
            self.expired_at,
            self.deadline_ms,
        )

    @classmethod
    def from_row(cls, row: tuple[str, str, int, str | None, str | None, int | None]) -> KeyState:
        seen, first, started, fired, expired, deadline = row
        return cls(
            {name: Seen.from_list(entry) for name, entry in json.loads(seen).items()},
            first,
            int(started),
            fired,
            expired,
            deadline,
        )


# The state's Spark columns, in :meth:`KeyState.to_row` order.
STATE_COLUMNS = (
    ("seen", "STRING"),
    ("first_ack_at", "STRING"),
    ("started_ms", "BIGINT"),
    ("fired_at", "STRING"),
    ("expired_at", "STRING"),
    ("deadline_ms", "BIGINT"),
)


STATE_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in STATE_COLUMNS)
