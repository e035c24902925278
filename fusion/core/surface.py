"""A package's public surface, each name imported when first used (PEP 562).

Every package lists what other packages may import from it in its
``__init__.py``, under ``if TYPE_CHECKING:``, one ``from module import name as
name`` a line, and hands those names on with :func:`attach`. A name's module
is imported the first time the name is asked for, so importing a package costs
nothing until one of its names is used (an executor's task imports what it
runs, not the whole package), and no package's ``__init__`` takes part in an
import cycle. Type checkers read the same lines as plain imports: one list,
read by both.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path


def attach(
    package: str, init_file: str
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` of ``package``, from its ``__init__``.

    Its source is read through the package's loader: on an executor, Fusion's
    code comes in a zip (:mod:`fusion.spark.shipping`), where no file is at
    ``init_file``.
    """
    loader = getattr(sys.modules.get(package), "__loader__", None)
    source = loader.get_source(package) if loader is not None else None
    where = names_in(source if source is not None else Path(init_file).read_text())

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == package:  # a submodule of the package itself
            return importlib.import_module(f"{package}.{name}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, sorted(where)


def surface_of(init: Path) -> dict[str, str]:
    """Each name an ``__init__.py`` hands on, with the module it comes from."""
    return names_in(init.read_text())


def names_in(source: str) -> dict[str, str]:
    """Each name an ``__init__``'s source hands on, with the module it comes from: the
    imports of its ``if TYPE_CHECKING:`` block."""
    where: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for line in node.body:
                if isinstance(line, ast.ImportFrom) and line.module:
                    for alias in line.names:
                        where[alias.asname or alias.name] = line.module
    return where
