"""Small modules and packages: none over the sizes the project holds itself to."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    path
    for package in ("fusion", "indexers", "acks")
    for pattern in ("*.py", "*.java")
    for path in (ROOT / package).rglob(pattern)
]
MODULE_LINES = 300
PACKAGE_LINES = 2000


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_over_300_lines() -> None:
    large = {str(p.relative_to(ROOT)): n for p in SOURCES if (n := _lines(p)) > MODULE_LINES}
    assert not large, large


def test_no_package_is_over_2000_lines() -> None:
    """A package: the modules of one folder (a sub-package is a package of its own)."""
    sizes: dict[str, int] = {}
    for path in SOURCES:
        folder = str(path.parent.relative_to(ROOT))
        sizes[folder] = sizes.get(folder, 0) + _lines(path)
    large = {folder: n for folder, n in sizes.items() if n > PACKAGE_LINES}
    assert not large, large
