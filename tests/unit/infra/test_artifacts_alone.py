"""The image build fetches the servers with ``python -m fusion.infra.fetch`` from a copy
of a few files only (Dockerfile.offline): the module must import nothing else."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]


def _copied_before_the_code() -> list[str]:
    """The project files the image's fetch layer copies, read from Dockerfile.offline."""
    text = (ROOT / "Dockerfile.offline").read_text()
    layer = text[: text.index("python3 -m fusion.infra.fetch")]
    sources: list[str] = []
    for line in re.findall(r"^COPY (.+)$", layer, flags=re.MULTILINE):
        *files, _target = line.split()
        sources += [f for f in files if f.startswith("fusion")]
    return sources


def test_the_fetch_layer_copies_every_module_the_fetch_imports() -> None:
    probe = (
        "import sys, fusion.infra.fetch; "
        "print('\\n'.join(m.__file__ for m in list(sys.modules.values()) "
        "if getattr(m, '__file__', None) and m.__name__.split('.')[0] == 'fusion'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    imported = {Path(f).resolve().relative_to(ROOT).as_posix() for f in done.stdout.split()}
    copied = _copied_before_the_code()

    missing = [
        f
        for f in sorted(imported)
        if not any(f == c or f.startswith(c.rstrip("/") + "/") for c in copied)
    ]
    assert copied and not missing, f"Dockerfile.offline's fetch layer lacks {missing}"
