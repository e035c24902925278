from __future__ import annotations

from fusion.core.machine.ports import EPHEMERAL_RANGE, free_port, port_is_free


def test_free_port_is_free() -> None:
    port = free_port()

    assert port_is_free(port)


def test_a_free_port_is_none_an_outgoing_connection_could_take() -> None:
    # The kernel picks the local port of every outgoing connection from this range: a server's
    # port chosen inside it can be taken by a client before the server binds it.
    low, high = (int(n) for n in EPHEMERAL_RANGE.read_text().split())

    ports = {free_port() for _ in range(20)}

    assert all(not low <= port <= high for port in ports), (low, high, sorted(ports))
