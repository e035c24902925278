"""Servers that the pytest-xdist workers of one run share.

`make test` runs test files on two workers side by side, on a machine whose two cores
the tests keep busy. A Kafka, an Elasticsearch, a Connect worker or a registry each
worker started for itself doubled what the servers cost (their start, and their idle
CPU for the whole run), for nothing: every test works in topics, indexes, schemas and
connectors of its own names. So the first worker to need a server starts it, the
others read where it answers, and the worker that started it stops it once no worker
uses it any more (it waits for the others at the end of its session).

Outside pytest-xdist the server is simply started and stopped around its use.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# How long the worker that started a server waits for the others to be done with it:
# longer than any test file, shorter than CI's limit.
WAIT_FOR_USERS_SECONDS = 3600.0


def run_directory(basetemp: Path) -> Path | None:
    """The directory every worker of this run sees (None outside pytest-xdist).

    Each worker's base temporary directory is a child of the run's own
    (``pytest-<n>/popen-gw0``): the sibling workers find the same parent.
    """
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else None


@contextlib.contextmanager
def shared(
    name: str,
    run_dir: Path | None,
    start: Callable[[], contextlib.AbstractContextManager[T]],
    encode: Callable[[T], dict[str, Any]],
    decode: Callable[[dict[str, Any]], T],
) -> Iterator[T]:
    """``start()``'s value, started by the first worker that asks and shared with the rest.

    ``encode`` and ``decode`` carry the value between workers as JSON (where the
    server answers: ports, URLs, directories).
    """
    if run_dir is None:
        with start() as value:
            yield value
        return
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    lock, state_file = run_dir / f"{slug}.lock", run_dir / f"{slug}.json"
    with contextlib.ExitStack() as owned:
        with _locked(lock):
            state = _read(state_file)
            started = state is None
            if state is None:
                # Started while the lock is held: another worker asking now waits for it.
                value = owned.enter_context(start())
                state = {"value": encode(value), "users": []}
            else:
                value = decode(state["value"])
            state["users"].append(os.getpid())
            _write(state_file, state)
        try:
            yield value
        finally:
            _leave(lock, state_file)
            if started:
                _wait_until_unused(lock, state_file)


@contextlib.contextmanager
def exclusive(name: str, run_dir: Path | None) -> Iterator[None]:
    """Held by one worker at a time: for a test that changes what the shared servers do
    for everyone (a cluster-wide setting), for as long as it does."""
    if run_dir is None:
        yield
        return
    with _locked(run_dir / f"{name}.exclusive.lock"):
        yield


def _leave(lock: Path, state_file: Path) -> None:
    with _locked(lock):
        state = _read(state_file)
        if state is not None and os.getpid() in state["users"]:
            state["users"].remove(os.getpid())
            _write(state_file, state)


def _wait_until_unused(lock: Path, state_file: Path) -> None:
    """Return once no live worker uses the server; the next to ask starts one anew."""
    deadline = time.monotonic() + WAIT_FOR_USERS_SECONDS
    while True:
        with _locked(lock):
            state = _read(state_file) or {"users": []}
            if not any(_alive(pid) for pid in state["users"]) or time.monotonic() > deadline:
                state_file.unlink(missing_ok=True)
                return
        time.sleep(0.5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, and another user's
    return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _write(path: Path, state: dict[str, Any]) -> None:
    path.write_text(json.dumps(state))
