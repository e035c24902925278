"""The unprivileged system users that servers refusing root run as (Elasticsearch,
PostgreSQL), and the files and directories they must own or reach."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from fusion.infra.errors import InfraError


def run_as(
    user: str, server: str, home: Path, reaches: tuple[Path, ...], on_change: Callable[[str], None]
) -> str | None:
    """As root, the user ``server`` runs as (it refuses root), owning ``home``; else None."""
    if os.geteuid() != 0:
        return None
    if ensure_user(user):
        on_change(
            f"created the system user {user} (no login, no home): {server} "
            f"refuses to run as root; it owns {home}"
        )
    chown_tree(home, user)
    widened = grant_search(home, *reaches)
    if widened:
        on_change(
            f"let other users traverse (chmod o+x) {', '.join(map(str, widened))}, "
            f"so {user} reaches {server}, its data and what it runs on"
        )
    return user


def ensure_user(name: str) -> bool:
    """Create the system user ``name`` (no login, no home) unless it exists; True if created."""
    try:
        pwd.getpwnam(name)
        return False
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise InfraError(
                f"a server that refuses to run as root needs the user {name}, and `useradd` "
                "is missing to create it; create it yourself or run fusion as a normal user"
            ) from None
        options = ["--system", "--no-create-home", "--home-dir", "/nonexistent"]
        options += ["--shell", "/usr/sbin/nologin"]
        subprocess.run([useradd, *options, name], check=True, capture_output=True)
    return True


def chown_tree(root: Path, user: str) -> None:
    account = pwd.getpwnam(user)
    for path in [root, *root.rglob("*")]:
        os.lchown(path, account.pw_uid, account.pw_gid)


def grant_search(*paths: Path) -> list[Path]:
    """Let other users traverse (not list) every directory above ``paths``; return those changed."""
    changed = []
    for path in paths:
        for parent in path.resolve().parents:
            mode = parent.stat().st_mode
            if not mode & stat.S_IXOTH:
                os.chmod(parent, mode | stat.S_IXOTH)
                changed.append(parent)
    return changed
