"""Ports for the servers Fusion starts: free now, and out of the way of outgoing connections."""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port(host: str = "127.0.0.1") -> int:
    """A free port below the kernel's ephemeral range (else one the kernel hands out): the
    range outgoing connections take their ports from, so a client of another server could
    take a port chosen in it before its server binds it (a CI run lost Kafka's listener so)."""
    with contextlib.suppress(OSError, ValueError):
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
        for port in random.sample(range(10_000, max(low, 10_000)), min(200, max(low - 10_000, 0))):
            if port_is_free(port, host):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        bound: int = sock.getsockname()[1]
        return bound
