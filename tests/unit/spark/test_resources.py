"""Clients are closed when they are dropped, not left to the garbage collector.

Counted as the kernel sees this process: its threads (``/proc/self/task``,
librdkafka's native ones included) and open file descriptors (sockets).
Nothing here needs a server: the clients point at a port nobody listens on.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from confluent_kafka import Producer

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.kafka.retry import retire
from fusion.observe.metrics import Metrics
from fusion.ops.health import HealthWatch

NOBODY = "127.0.0.1:9"  # the discard port: nothing listens on it here


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _settles(measure: Callable[[], int], target: int, timeout: float = 10.0) -> int:
    """The measure once it reached ``target`` or ``timeout`` passed (threads end asynchronously)."""
    deadline = time.monotonic() + timeout
    while measure() > target and time.monotonic() < deadline:
        time.sleep(0.05)
    return measure()


def _most(measure: Callable[[], int], seconds: float) -> int:
    """The highest reading of ``measure`` over ``seconds``."""
    deadline = time.monotonic() + seconds
    most = measure()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        most = max(most, measure())
    return most


def test_a_dropped_producer_is_closed_once_its_stuck_call_returns() -> None:
    before = _threads()
    producer = Producer({"bootstrap.servers": NOBODY})
    assert _threads() > before  # librdkafka's own threads
    released = threading.Event()
    stuck = threading.Thread(target=released.wait, daemon=True)  # a call that hangs
    stuck.start()

    closer = retire(producer, stuck, budget=30)
    time.sleep(0.2)
    assert closer.is_alive(), "closed while its call was still inside the client"
    released.set()
    closer.join(10)

    # Closed, although this test still holds the producer: its threads are gone now.
    assert _settles(_threads, before) <= before


def test_restarted_health_watches_leave_no_thread_or_socket_behind() -> None:
    data = Settings().model_dump(mode="python")
    data["kafka"]["bootstrap"] = NOBODY
    data["elasticsearch"]["url"] = f"http://{NOBODY}"
    data["pipeline"] = {"name": "p", "key_field": "id"}
    data["sources"] = [{"name": "a"}, {"name": "b"}]
    config = PipelineConfig.model_validate(data)

    def watch() -> None:
        with HealthWatch(config, Metrics(), interval=0.05):
            time.sleep(0.3)  # a few probes: connections tried, clients' threads running

    watch()  # the first start makes what the process keeps: one admin client per cluster
    # What the process keeps, at its most: the kept admin client reconnects to the port
    # nobody listens on now and then, a socket open for a moment. Five restarts that
    # leaked a client each would leave five threads or sockets more.
    threads, fds = _most(_threads, seconds=1), _most(_fds, seconds=1)
    for _ in range(5):  # a driver restarting its queries
        watch()

    assert _settles(_threads, threads) <= threads
    assert _settles(_fds, fds) <= fds
