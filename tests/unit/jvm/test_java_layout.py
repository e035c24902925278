"""Fusion's Java packages import downwards only: no cycle between them, as in Python."""

from __future__ import annotations

import re
from pathlib import Path

from fusion.infra import jvm_code as jvm
from tests.unit.test_layout import _cycle

# Lowest first: a package imports its own layer or lower.
LAYERS = [
    {"fusion.contract"},  # what Python and Java share: the counter's rows, metric names
    {"fusion.output"},  # the exactly-once writers, spools and fault injection
    {"fusion.counter"},  # the counter: ack parser, keyed state, events
]

_PACKAGE = re.compile(r"^package ([\w.]+);", re.M)
# An import, or a name written out in full in the code (fusion.x.Y).
_USES = re.compile(r"\b(fusion\.[a-z]+)\.[A-Z]\w*")


def _graph(root: Path) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.java")):
        source = path.read_text()
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)  # comments name freely
        package = _PACKAGE.search(source)
        assert package, f"{path} declares no package"
        used = set(_USES.findall(code)) - {package.group(1)}
        graph.setdefault(package.group(1), set()).update(used)
    return graph


def test_no_java_package_imports_itself_through_others() -> None:
    cycle = _cycle(_graph(jvm.SOURCES))
    assert cycle is None, " -> ".join(cycle or [])


def test_each_java_package_imports_only_its_layer_or_lower() -> None:
    layer_of = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    graph = _graph(jvm.SOURCES)
    assert set(graph) <= set(layer_of), set(graph) - set(layer_of)
    wrong = [
        f"{package} -> {target}"
        for package, targets in graph.items()
        for target in targets
        if layer_of.get(target, -1) > layer_of[package]
    ]
    assert not wrong, wrong


def test_the_java_graph_sees_imports_and_full_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "A.java").write_text("package fusion.a;\nimport fusion.b.B;\nclass A {}\n")
    (tmp_path / "b" / "B.java").write_text(
        "package fusion.b;\n/** fusion.c.C in a comment */\n"
        "class B { Object x = fusion.a.A.class; }\n"
    )
    graph = _graph(tmp_path)
    assert graph == {"fusion.a": {"fusion.b"}, "fusion.b": {"fusion.a"}}
    assert _cycle(graph) == ["fusion.a", "fusion.b", "fusion.a"]
