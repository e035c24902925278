"""What Fusion's modules import, read from their source (the layout and shipping tests)."""

from __future__ import annotations

import ast
from pathlib import Path

from fusion.core.surface import surface_of


def module_name(path: Path, root: Path) -> str:
    """``fusion/spark/session.py`` under ``root`` is ``fusion.spark.session``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def surface(init: Path, package: str) -> dict[str, str]:
    """The names a package hands on (:mod:`fusion.core.surface`), each with the module it comes
    from; empty for a package without any."""
    found = surface_of(init).items()
    return {name: f"{package}.{name}" if module == package else module for name, module in found}


def imports(path: Path, modules: set[str], load_time: bool = False) -> set[str]:
    """The ``modules`` that ``path`` imports, but for type checking only.

    ``from package import name`` counts as ``package`` and the module ``name``
    comes from: ``package.name`` for a submodule, the module the package's
    surface names for a name it hands on (imported when first used, but a
    dependency all the same); ``load_time``: only what it imports as it loads,
    not inside functions. A package's own surface (its ``__init__``'s type-checking
    imports) counts as nothing: those modules load when a name is used.
    """
    root = next(p for p in path.parents if not (p / "__init__.py").is_file())
    found: set[str] = set()
    todo: list[ast.AST] = [ast.parse(path.read_text())]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if load_time and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [_source(root, node.module, a.name) for a in node.names]
        found |= {name for name in names if name in modules}
    return found


def _source(root: Path, module: str, name: str) -> str:
    """The module ``from module import name`` takes ``name`` from."""
    init = root / module.replace(".", "/") / "__init__.py"
    handed_on = surface(init, module) if init.is_file() else {}
    return handed_on.get(name, f"{module}.{name}")
