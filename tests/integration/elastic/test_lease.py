"""One process per pipeline component, held to it by leases in a real Elasticsearch.

The processes of another machine are lease documents written here as that
machine's process would (another host name, a pid that means nothing here):
Elasticsearch's optimistic concurrency is what decides, not this test.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import pytest
from elasticsearch import Elasticsearch

from fusion.core.machine.holder import Holder
from fusion.elastic.errors import AlreadyRunningError, LeaseLostError
from fusion.elastic.lease import Lease
from tests.integration.runs import timed

LEASE_SECONDS = 2.0


def _lease(es: Elasticsearch, index: str, *components: str) -> Lease:
    return Lease(es, index, "p", components or ("counter",), LEASE_SECONDS)


def _elsewhere() -> Holder:
    """A process of another machine, as its lease document names it."""
    here = Holder.this_process()
    return dataclasses.replace(here, host="another-machine", boot="b", pid=4242, token="t-other")


def _write_holder(
    es: Elasticsearch, index: str, holder: Holder, component: str = "counter"
) -> None:
    document = holder.to_doc() | {"released": False, "renewed_at": "2026-01-01T00:00:00Z"}
    es.index(index=index, id=component, document=document)


def test_a_second_lease_on_a_running_component_is_refused_naming_the_first(
    es: Elasticsearch, make_index: Callable[[str], str]
) -> None:
    index = make_index("lease")
    with _lease(es, index, "indexer:a", "counter") as first:
        second = _lease(es, index, "indexer:b", "counter")
        with pytest.raises(AlreadyRunningError) as refused:
            second.acquire()
        assert f"pid {first.me.pid} on {first.me.host}" in str(refused.value)
        assert refused.value.component == "counter"
        # The second let go of what it had taken before the refusal: indexer:b is free.
        third = _lease(es, index, "indexer:b")
        third.acquire()
        third.release()
    # Released by a clean stop: the next process takes it at once.
    with _lease(es, index, "counter"):
        pass


def test_a_holder_on_this_machine_that_was_killed_is_taken_over_at_once(
    es: Elasticsearch, make_index: Callable[[str], str]
) -> None:
    index = make_index("lease")
    here = Holder.this_process()
    # A process of this boot whose pid now belongs to no process that started then.
    _write_holder(es, index, dataclasses.replace(here, start_ticks=1, token="t-killed"))
    lease = Lease(es, index, "p", ["counter"], lease_seconds=600.0)
    took = timed(lease.acquire, limit=30.0)  # a lease of 10 minutes, taken over at once
    assert took < 2.0, f"{took:.1f} s"
    assert es.get(index=index, id="counter")["_source"]["token"] == lease.me.token
    lease.release()


def test_a_holder_elsewhere_that_stopped_renewing_is_taken_over_after_the_lease(
    es: Elasticsearch, make_index: Callable[[str], str]
) -> None:
    index = make_index("lease")
    _write_holder(es, index, _elsewhere())
    lease = _lease(es, index)
    took = timed(lease.acquire, limit=10 * LEASE_SECONDS)
    assert took >= LEASE_SECONDS, f"taken over after {took:.1f} s, before the lease ran out"
    assert es.get(index=index, id="counter")["_source"]["token"] == lease.me.token
    lease.release()


def test_a_holder_elsewhere_that_renews_is_refused(
    es: Elasticsearch, make_index: Callable[[str], str]
) -> None:
    index = make_index("lease")
    other = _elsewhere()
    _write_holder(es, index, other)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LEASE_SECONDS / 4):
            _write_holder(es, index, other)

    renewing = threading.Thread(target=renew, daemon=True)
    renewing.start()
    try:
        with pytest.raises(AlreadyRunningError) as refused:
            timed(_lease(es, index).acquire, limit=10 * LEASE_SECONDS)
        assert "pid 4242 on another-machine" in str(refused.value)
    finally:
        stop.set()
        renewing.join()


def test_a_holder_taken_over_learns_it_at_its_next_renewal(
    es: Elasticsearch, make_index: Callable[[str], str]
) -> None:
    index = make_index("lease")
    with _lease(es, index) as lease:
        # Another machine took it over (this one could not renew for the lease's length).
        _write_holder(es, index, _elsewhere())
        deadline = time.monotonic() + 10 * LEASE_SECONDS
        with pytest.raises(LeaseLostError) as lost:
            while time.monotonic() < deadline:
                lease.check()
                time.sleep(0.1)
        assert "pid 4242 on another-machine" in str(lost.value)
    # Its stop did not release the other's lease.
    assert es.get(index=index, id="counter")["_source"]["token"] == "t-other"
