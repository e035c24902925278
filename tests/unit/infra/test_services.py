"""Whether `fusion infra up` starts a server: its port free, or its own port let go a moment
after the server that held it stopped."""

from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace

import pytest

from fusion.infra.errors import PortInUseError
from fusion.infra.services import reuse


def _stopped() -> SimpleNamespace:
    return SimpleNamespace(name="elasticsearch", process=SimpleNamespace(is_running=lambda: False))


def _held(release_after: float | None) -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    if release_after is not None:
        threading.Timer(release_after, sock.close).start()
    return sock, sock.getsockname()[1]


def test_a_stopped_servers_own_port_is_waited_for_until_it_is_let_go() -> None:
    sock, port = _held(release_after=1.0)
    started = time.monotonic()

    assert reuse(_stopped(), {"port": port}, port, "--es-port") is False

    assert 0.5 < time.monotonic() - started < 10
    sock.close()


def test_a_port_someone_else_holds_is_refused_at_once() -> None:
    sock, port = _held(release_after=None)
    started = time.monotonic()

    with pytest.raises(PortInUseError, match="already in use"):
        reuse(_stopped(), {"port": port + 1}, port, "--es-port")

    assert time.monotonic() - started < 1
    sock.close()
