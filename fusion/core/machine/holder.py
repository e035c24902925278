"""Who runs a pipeline's component: a process, told apart from every other (pure, and ``/proc``).

A running ``fusion run`` holds a lease on each component it runs
(:mod:`fusion.elastic.lease`); the lease names its holder so that a second
process can say which one runs, and can tell a holder killed on this machine
(its pid gone, or reused by another process) from one that still runs.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Literal

from fusion.core import now_iso
from fusion.core.machine import procfs

Liveness = Literal["alive", "gone", "unknown"]


@dataclass(frozen=True)
class Holder:
    """One process: where it runs, which process it is, and a token of its own."""

    host: str
    boot: str  # the kernel's boot id: a pid means something within one boot only
    pid: int
    start_ticks: int  # when the pid's process started: a reused pid is another process
    started_at: str
    command: str
    token: str  # this process's own, for its lease writes: unique whatever the host

    @classmethod
    def this_process(cls) -> Holder:
        pid = os.getpid()
        command = " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:3]])
        return cls(
            socket.gethostname(),
            procfs.boot_id(),
            pid,
            procfs.start_ticks(pid) or 0,
            now_iso(),
            command,
            uuid.uuid4().hex,
        )

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Holder:
        fields = {name: doc.get(name) for name in cls.__dataclass_fields__}
        return cls(
            str(fields["host"] or "?"),
            str(fields["boot"] or ""),
            int(fields["pid"] or 0),
            int(fields["start_ticks"] or 0),
            str(fields["started_at"] or "?"),
            str(fields["command"] or "?"),
            str(fields["token"] or ""),
        )

    def to_doc(self) -> dict[str, Any]:
        return asdict(self)

    def liveness(self, here: Holder) -> Liveness:
        """Whether this holder still runs, as seen from the process ``here``.

        On the same machine and boot, ``/proc`` answers; from another machine
        only the holder's renewals of its lease can tell (``unknown``).
        """
        if self.host != here.host or not self.boot or self.boot != here.boot:
            return "unknown"
        started, stat = procfs.start_ticks(self.pid), procfs.stat(self.pid)
        if started != self.start_ticks or stat is None or stat.state in ("Z", "X"):
            return "gone"  # ended (a zombie not yet reaped has ended too), or a reused pid
        return "alive"

    def describe(self) -> str:
        """One phrase naming the process, for an operator's line."""
        return f"pid {self.pid} on {self.host} ({self.command}, started {self.started_at})"
