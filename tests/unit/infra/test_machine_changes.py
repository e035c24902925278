"""`fusion infra up` says what it changed on the machine, once: a system user, permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fusion.infra.accounts import ensure_user, grant_search


def test_traverse_permissions_are_reported_once_for_the_directories_changed(
    tmp_path: Path,
) -> None:
    closed = tmp_path / "closed"
    inner = closed / "inner" / "dist"
    inner.mkdir(parents=True)
    os.chmod(closed, 0o700)
    os.chmod(closed / "inner", 0o755)

    first = grant_search(inner)
    second = grant_search(inner)

    assert closed in first and closed / "inner" not in first
    assert closed.stat().st_mode & stat.S_IXOTH
    assert not closed.stat().st_mode & stat.S_IROTH  # traverse, not list
    assert second == []  # already done: nothing to say the next time


@pytest.mark.skipif(os.geteuid() != 0, reason="useradd needs root")
def test_an_existing_user_is_not_created_again() -> None:
    assert ensure_user("root") is False
