"""A local PostgreSQL server for change-data-capture: Debian's package, our data directory.

The server binaries are the machine's (``apt-get install postgresql-15``);
the cluster is Fusion's own, under ``<state_dir>/postgres``, so nothing of the
machine's own PostgreSQL (its clusters, its service) is touched. Logical
decoding is on (``wal_level = logical``), which Debezium's ``pgoutput`` plugin
reads. PostgreSQL refuses to run as root: as root, the cluster belongs to the
system user ``fusion-pg``, as Elasticsearch's node belongs to ``fusion-es``.

Clients connect over TCP on 127.0.0.1 as the superuser ``fusion`` without a
password (``trust``, loopback only: a development server, never exposed).
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from fusion.infra import ManagedProcess, ServerStartError, ToolMissingError, run_as

PG_USER = "fusion-pg"  # the system user the cluster runs as when we are root
PG_ROLE = "fusion"  # the database superuser Fusion and the connector log in as
PG_DATABASE = "fusion"
PG_VERSIONS = ("15", "16", "17", "14", "13")  # Debian's, the one Fusion is tested on first
# Logical decoding for Debezium; a slot and a sender per connector, with room to spare.
SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "listen_addresses": "127.0.0.1",
    "fsync": "off",  # a development server: a crash of the machine may lose its data
    "synchronous_commit": "off",
}


def pg_bin(root: Path = Path("/usr/lib/postgresql")) -> Path:
    """The directory of the installed server binaries, or one line saying how to install them."""
    for version in PG_VERSIONS:
        candidate = root / version / "bin"
        if (candidate / "postgres").is_file():
            return candidate
    raise ToolMissingError(
        "postgres",
        "install Debian's PostgreSQL server (`apt-get install postgresql-15`) for `--cdc`",
    )


class LocalPostgres:
    """One PostgreSQL cluster, data under ``<state_dir>/postgres/data``."""

    name = "postgres"

    def __init__(self, state_dir: Path, bin_dir: Path | None = None) -> None:
        self.dir = state_dir / "postgres"
        self.bin = bin_dir or pg_bin()
        self.process = ManagedProcess(
            "postgres",
            self.dir / "postgres.pid",
            self.dir / "postgres.log",
            marker="postgres",
            stop_signal=signal.SIGINT,
        )

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def start(self, port: int, on_change: Callable[[str], None] = lambda _: None) -> None:
        """Create the cluster on first start, then launch the server on ``port``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        user = run_as(PG_USER, "PostgreSQL", self.dir, (self.bin,), on_change)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(user)
        options = [f"--{name.replace('_', '-')}={value}" for name, value in SETTINGS.items()]
        argv = [str(self.bin / "postgres"), "-D", str(self.data_dir), f"--port={port}"]
        argv += [f"--unix-socket-directories={self.dir}", *options]
        self.process.start(argv, self._env(), cwd=self.dir, user=user)

    def _initdb(self, user: str | None) -> None:
        argv = [str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", PG_ROLE]
        argv += ["--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"]
        account = pwd.getpwnam(user) if user else None
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=self._env(),
            cwd=self.dir,
            user=account.pw_uid if account else None,
            group=account.pw_gid if account else None,
            extra_groups=[] if account else None,
            check=False,
        )
        if result.returncode != 0:
            raise ServerStartError("postgres", "initdb failed", result.stderr or result.stdout)

    def create_database(self, port: int) -> None:
        """The database Fusion's examples and tests use (once: it may exist)."""
        sql = f"SELECT 1 FROM pg_database WHERE datname = '{PG_DATABASE}'"
        if self.sql(port, sql, database="postgres").strip() != "1":
            self.sql(port, f"CREATE DATABASE {PG_DATABASE}", database="postgres")

    def sql(self, port: int, statement: str, database: str = PG_DATABASE) -> str:
        """Run one statement through psql: its rows, unaligned; psql's error raised."""
        argv = [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", PG_ROLE]
        argv += ["-d", database, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", statement]
        result = subprocess.run(argv, capture_output=True, text=True, env=self._env(), check=False)
        if result.returncode != 0:
            raise ServerStartError("postgres", f"psql failed: {statement[:80]}", result.stderr)
        return result.stdout

    def drop_slot(self, port: int, prefix: str) -> None:
        """Drop the replication slot and publication of a connector (``postgres_connector``'s
        names for ``prefix``), once it is gone: a slot keeps the server's WAL forever."""
        slot = slot_name(prefix)
        deadline = time.monotonic() + 30
        while True:  # the connector's task lets go of the slot a moment after it is deleted
            found = f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}_slot'"
            active = self.sql(port, found).strip()
            if active != "t" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if active:
            self.sql(port, f"SELECT pg_drop_replication_slot('{slot}_slot')")
        self.sql(port, f"DROP PUBLICATION IF EXISTS {slot}_publication")

    def healthy(self, port: int) -> bool:
        """True once the server accepts connections."""
        argv = [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", PG_ROLE]
        result = subprocess.run(argv, capture_output=True, env=self._env(), check=False)
        return result.returncode == 0

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def slot_name(prefix: str) -> str:
    """The stem of a connector's replication slot and publication names for ``prefix``."""
    return prefix.replace("-", "_").replace(".", "_").lower()
