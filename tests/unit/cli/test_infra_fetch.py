"""``fusion infra fetch --only`` fetches the sets named, each once, in the order given."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.cli import infra_commands, parser
from fusion.core.settings import Settings


def _fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> list[str]:
    fetched: list[str] = []
    monkeypatch.setattr(infra_commands.ArtifactCache, "fetch", lambda _, name: fetched.append(name))
    args = parser.build().parse_args(["infra", "fetch", *argv])
    settings = Settings.load(env={"FUSION_HOME": str(tmp_path)})
    assert infra_commands.infra_fetch_command(args, settings) == 0
    return fetched


def test_only_may_be_repeated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ("--only", "kafka", "--only", "fusion-jvm")
    assert _fetched(tmp_path, monkeypatch, *argv) == ["kafka", "fusion-jvm"]


def test_without_only_every_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fetched(tmp_path, monkeypatch) == list(infra_commands.ARTIFACT_SETS)


def test_an_unknown_set_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser.build().parse_args(["infra", "fetch", "--only", "spark"])
    assert "invalid choice: 'spark'" in capsys.readouterr().err
