"""The import graph of Fusion's modules has no cycle, counting imports inside functions too;
each package imports another's names only from that package's public surface."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tests.unit.imports import imports, module_name, surface

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fusion", "indexers", "acks")


def _module(path: Path) -> str:
    return module_name(path, ROOT)


def _graph() -> dict[str, set[str]]:
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    modules = {_module(p) for p in files}
    return {_module(p): imports(p, modules) - {_module(p)} for p in files}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_module_imports_itself_through_others() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


# What each package may import, lowest first: a package imports its own layer or lower.
LAYERS = [
    {"fusion.core", "acks"},  # settings, errors, events, fault injection; the ack contract
    {"fusion.topology"},  # which queries a pipeline runs, what each reads, what it holds
    {"fusion.observe"},  # metrics, their names and the one reading of them (figures)
    # local servers, artifacts and the build of Fusion's JVM code; Kafka; Elasticsearch
    {"fusion.infra", "fusion.kafka", "fusion.elastic"},
    {"fusion.spark"},  # the session, the stage base class, tasks, checkpoints, query watch
    {"indexers", "fusion.counter", "fusion.enricher"},  # the stages
    {
        "fusion.pipeline",
        "fusion.single",
        "fusion.ops",
    },  # running the stages (apart, or as one query); status, explain, reconcile
    {"fusion.bench", "fusion.cli"},  # the benchmark; the command line
]


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "fusion" and len(parts) > 1 else parts[0]


def test_each_package_imports_only_its_layer_or_lower() -> None:
    layer_of = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    wrong = []
    for module, targets in _graph().items():
        here = _package(module)
        if here not in layer_of:
            continue  # fusion/__init__, fusion/__main__
        for target in targets:
            there = _package(target)
            if there in layer_of and layer_of[there] > layer_of[here]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, wrong


def test_every_package_has_a_layer() -> None:
    packages = {_package(module) for module in _graph()} - {"fusion", "fusion.__main__"}
    assert packages <= {package for layer in LAYERS for package in layer}, packages


SURFACE = "fusion.core.surface"  # what every package's __init__ hands its names on with


def _package_of(module: str) -> str:
    """The package a module belongs to: itself for a package's ``__init__``."""
    path = ROOT / module.replace(".", "/")
    return module if (path / "__init__.py").is_file() else module.rpartition(".")[0]


def _all(package: str) -> list[str]:
    """The names a package hands on, read from its stub without importing it."""
    init = ROOT / package.replace(".", "/") / "__init__.py"
    return sorted(surface(init, package))


def _packages() -> list[str]:
    inits = [p for package in PACKAGES for p in (ROOT / package).rglob("__init__.py")]
    return sorted(_module(p) for p in inits if _module(p) != "fusion")


def test_other_packages_import_only_a_packages_surface() -> None:
    """``from fusion.core import PipelineConfig``, never ``from fusion.core.config import ...``
    from another package; and only a name the package's ``__all__`` lists."""
    wrong = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            here = _package_of(_module(path))
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                    continue
                if node.module.split(".")[0] not in PACKAGES:
                    continue
                there = _package_of(node.module)
                if there in (here, "fusion") or node.module == SURFACE:
                    continue
                names = [a.name for a in node.names]
                if node.module != there or set(names) - set(_all(there)):
                    wrong.append(f"{_module(path)}: from {node.module} import {', '.join(names)}")
    assert not wrong, "\n".join(wrong)


def test_every_package_names_its_surface_and_each_name_is_there() -> None:
    for package in _packages():
        names = _all(package)
        assert names, f"{package}/__init__.py names nothing"
        module = importlib.import_module(package)
        assert module.__all__ == names, package
        for name in names:
            assert getattr(module, name) is not None, f"{package}.{name}"


def test_no_package_hands_on_a_name_that_one_of_its_modules_bears() -> None:
    """Once a package's module ``key_state`` is imported, ``from package import key_state``
    finds that module and never asks the surface for a function of that name."""
    clashes = []
    for package in _packages():
        folder = ROOT / package.replace(".", "/")
        for name, module in surface(folder / "__init__.py", package).items():
            own = (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()
            if own and module != f"{package}.{name}":
                clashes.append(f"{package}.{name} from {module}")
    assert not clashes, clashes
