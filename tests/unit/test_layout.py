"""The import graph of Fusion's modules has no cycle, counting imports inside functions too."""

from __future__ import annotations

from pathlib import Path

from tests.unit.imports import imports, module_name

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
