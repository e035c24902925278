"""Write a configuration back to TOML: how a process hands its pipeline to another one.

The benchmark starts `fusion run` as its own process (a driver of its own,
whose memory it measures) on a pipeline it built in code. Secrets are written
in clear: the file is created readable by its owner only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from fusion.core.settings import Settings


def write_config(settings: Settings, path: Path) -> Path:
    """``settings`` (a pipeline config or plain settings) as a TOML file at ``path``."""
    data = _plain(settings)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(dumps(data))
    return path


def dumps(data: dict[str, Any]) -> str:
    """TOML of two levels: tables (of scalars, lists, inline tables) and arrays of tables."""
    lines: list[str] = []
    for name, value in data.items():
        if isinstance(value, dict):
            lines += [f"[{name}]", *_pairs(value), ""]
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for item in value:
                lines += [f"[[{name}]]", *_pairs(item), ""]
    return "\n".join(lines)


def _pairs(table: dict[str, Any]) -> list[str]:
    return [f"{key} = {_value(value)}" for key, value in table.items() if value is not None]


def _value(value: Any) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)} = {_value(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return {
            name: _plain(getattr(value, name))
            for name in type(value).model_fields
            if getattr(value, name) is not None
        }
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
