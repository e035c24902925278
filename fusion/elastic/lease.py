"""One process per pipeline component: a lease per component, kept in Elasticsearch.

Two ``fusion run`` of one pipeline would each read the sources from their own
checkpoint and fire every key again (the default single layout), or fence
each other's transactions (the stages layout) after both wrote. So before a
run writes anything, it takes the lease of every component it runs (each
source's indexer, the counter, the enricher): one document per component in
``<pipeline>-fusion-lease``, written with Elasticsearch's optimistic
concurrency (``if_seq_no``/``if_primary_term``), so two processes can never
both believe they hold it.

1. no lease document, or one released by a clean stop: create it (or take it
   over); a process that raced this one to it wins, this one looks again;
2. a holder on this machine whose process is gone (killed with ``kill -9``):
   take it over at once;
3. a holder on this machine still running: refuse, naming it;
4. a holder on another machine: it renews its lease every third of
   ``lease_seconds``; if it does, refuse, naming it; if the document stays
   unchanged for ``lease_seconds``, the holder is gone: take it over.

While it runs, the holder renews each lease from a thread of its own; a
renewal that finds another holder means this process was taken over (it
could not reach Elasticsearch for longer than the lease): :meth:`Lease.check`
then stops the run with :class:`~fusion.elastic.errors.LeaseLostError`. A
clean stop releases the leases.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from elasticsearch import ApiError, BadRequestError, ConflictError, Elasticsearch, NotFoundError
from elasticsearch import TransportError as ESTransportError

from fusion.core import now_iso
from fusion.core.machine import Holder
from fusion.elastic.errors import (
    AlreadyRunningError,
    IndexAccessError,
    LeaseLostError,
    RetryBudgetExceeded,
)
from fusion.elastic.retry import RetryPolicy, call_with_retries

POLL_SECONDS = 0.5
# A lease is read through a moment of unavailability (a shard starting, a 429); its
# writes are not retried: a conflict is an answer, and a renewal tries again anyway.
RETRY = RetryPolicy(initial=0.2, maximum=2.0, budget_seconds=60.0)


@dataclass(frozen=True)
class Held:
    """A lease document as read: its holder, whether released, and its version for a CAS."""

    holder: Holder
    released: bool
    seq_no: int
    primary_term: int


class Lease:
    """The leases of one process on some components of one pipeline."""

    def __init__(
        self,
        es: Elasticsearch,
        index: str,
        pipeline: str,
        components: Sequence[str],
        lease_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.es = es
        self.index = index
        self.pipeline = pipeline
        self.components = list(components)
        self.seconds = lease_seconds
        self.clock = clock
        self.me = Holder.this_process()
        self._versions: dict[str, tuple[int, int]] = {}
        self._lost: tuple[str, Holder] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="fusion-lease", daemon=True)

    def __enter__(self) -> Lease:
        self.acquire()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.release()

    def acquire(self) -> None:
        """Take every component's lease, or release those taken and raise AlreadyRunningError."""
        try:
            self._ensure_index()
            for component in self.components:
                self._versions[component] = self._claim(component)
        except AlreadyRunningError:
            self.release()
            raise
        except ApiError as exc:
            self.release()
            if exc.meta.status in (401, 403):
                raise IndexAccessError(self.index, exc.meta.status, str(exc.message)) from None
            raise

    def check(self) -> None:
        """Raise LeaseLostError if another process took one of this one's leases over."""
        if self._lost is not None:
            component, holder = self._lost
            raise LeaseLostError(self.pipeline, component, holder.describe())

    def release(self) -> None:
        """Mark this process's leases released: the next process takes them at once."""
        for component, version in list(self._versions.items()):
            with contextlib.suppress(ApiError, ESTransportError):
                self._write(component, version, released=True)
            del self._versions[component]

    def _claim(self, component: str) -> tuple[int, int]:
        watched: tuple[int, float] | None = None  # (seq_no, since) of a holder elsewhere
        while True:
            held = self._read(component)
            if held is None:
                try:
                    return self._create(component)
                except ConflictError:
                    continue  # another process created it first: look at that one
            liveness = "gone" if held.released else held.holder.liveness(self.me)
            if liveness == "alive":
                raise AlreadyRunningError(self.pipeline, component, held.holder.describe())
            if liveness == "unknown":
                if watched is None or watched[0] != held.seq_no:
                    if watched is not None:  # it renewed: it runs
                        raise AlreadyRunningError(self.pipeline, component, held.holder.describe())
                    watched = (held.seq_no, self.clock())
                if self.clock() - watched[1] < self.seconds:
                    time.sleep(POLL_SECONDS)
                    continue
            try:
                return self._write(component, (held.seq_no, held.primary_term))
            except ConflictError:
                watched = None  # taken by another process meanwhile: look at that one

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            for component, version in list(self._versions.items()):
                try:
                    self._versions[component] = self._write(component, version)
                except ConflictError:
                    self._taken_over(component)
                except (ApiError, ESTransportError):
                    pass  # Elasticsearch unreachable: renew at the next round

    def _taken_over(self, component: str) -> None:
        """A renewal met another version: a lost reply of ours, or another holder."""
        with contextlib.suppress(ApiError, ESTransportError, RetryBudgetExceeded):
            held = self._read(component)
            if held is not None and held.holder.token == self.me.token:
                self._versions[component] = (held.seq_no, held.primary_term)
            elif held is not None:
                self._lost = (component, held.holder)
                del self._versions[component]

    def _doc(self, released: bool = False) -> dict[str, Any]:
        return self.me.to_doc() | {"released": released, "renewed_at": now_iso()}

    def _read(self, component: str) -> Held | None:
        try:
            found = call_with_retries(
                partial(self.es.get, index=self.index, id=component), "read a lease", RETRY
            )
        except NotFoundError:
            return None
        source = dict(found["_source"])
        return Held(
            Holder.from_doc(source),
            bool(source.get("released")),
            int(found["_seq_no"]),
            int(found["_primary_term"]),
        )

    def _create(self, component: str) -> tuple[int, int]:
        done = self.es.create(index=self.index, id=component, document=self._doc())
        return int(done["_seq_no"]), int(done["_primary_term"])

    def _write(
        self, component: str, version: tuple[int, int], released: bool = False
    ) -> tuple[int, int]:
        seq_no, term = version
        done = self.es.index(
            index=self.index,
            id=component,
            document=self._doc(released),
            if_seq_no=seq_no,
            if_primary_term=term,
        )
        return int(done["_seq_no"]), int(done["_primary_term"])

    def _ensure_index(self) -> None:
        if not self.es.indices.exists(index=self.index):
            settings = {"number_of_shards": 1, "auto_expand_replicas": "0-1"}
            try:
                self.es.indices.create(index=self.index, settings=settings)
            except BadRequestError as exc:
                if exc.error != "resource_already_exists_exception":
                    raise
        # Another component's process may have created it a moment ago: its shard may still
        # be starting (a read then answers 503), so wait for it.
        self.es.cluster.health(index=self.index, wait_for_status="yellow", timeout="60s")
