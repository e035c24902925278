"""Each metric name is written in one place per language, and the two places agree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from fusion.infra import jvm_code as jvm
from fusion.observe import names

ROOT = Path(__file__).resolve().parents[3]
JAVA = jvm.SOURCES / "fusion" / "contract" / "MetricNames.java"


def _python_names() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(names).items()
        if name.isupper() and isinstance(value, str) and "." in value
    }


def _java_names() -> dict[str, str]:
    return dict(re.findall(r'static final String (\w+) = "([^"]*)";', JAVA.read_text()))


def test_the_jvms_names_are_pythons() -> None:
    java = _java_names()
    assert java, f"no names found in {JAVA}"
    python = _python_names()
    assert {name: python.get(name) for name in java} == java


def _literals(path: Path) -> set[str]:
    if path.suffix == ".py":
        tree = ast.parse(path.read_text())
        return {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
    return set(re.findall(r'"([^"\\]*)"', path.read_text()))


def test_no_writer_spells_a_metric_name_of_its_own() -> None:
    """A name's value appears as a literal only where it is defined (names.py, MetricNames)."""
    values = set(_python_names().values())
    homes = {ROOT / "fusion" / "observe" / "names.py", JAVA}
    files = [
        path
        for package in ("fusion", "indexers", "acks")
        for pattern in ("*.py", "*.java")
        for path in (ROOT / package).rglob(pattern)
        if path not in homes
    ]
    spelled = {
        f"{path.relative_to(ROOT)}: {value}" for path in files for value in _literals(path) & values
    }
    assert not spelled, sorted(spelled)
