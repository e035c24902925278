"""``python -m fusion.infra.fetch kafka elasticsearch``: artifact sets into the Fusion cache.

The image build's way (Dockerfile.offline): it runs on fusion.infra,
fusion.core.errors and fusion.core.surface alone, so the image fetches the
servers in a layer that a change to the rest of the code keeps. Everyone else
runs ``fusion infra fetch``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fusion.infra.artifacts import ARTIFACT_SETS, ArtifactCache


def main(names: list[str]) -> None:
    home = Path(os.environ.get("FUSION_HOME", "~/.cache/fusion")).expanduser()
    cache = ArtifactCache(home)
    for name in names:
        if name not in ARTIFACT_SETS:
            raise SystemExit(f"error: no artifact set {name!r}; known: {', '.join(ARTIFACT_SETS)}")
        cache.fetch(name)


if __name__ == "__main__":
    main(sys.argv[1:])
