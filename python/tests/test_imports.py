"""The package's import structure, read from the source with ``ast`` (nothing is
imported): the modules of python/vkcuda import each other without a circle,
and no function imports a module of the package (an import inside a function
is how a circle hides). Every import counts, wherever it stands: at module
level, under ``if TYPE_CHECKING:``, in a class or in a function. The floor,
``_types``, imports nothing of the package."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

PACKAGE = Path(__file__).resolve().parents[1] / "vkcuda"
NAME = "vkcuda"
INIT = "__init__"


def _targets(node: ast.AST, modules: Set[str]) -> List[str]:
    """The package's modules an import statement loads (``__init__`` for the
    package itself); [] for an import from outside the package."""
    if isinstance(node, ast.Import):
        found = []
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == NAME:
                found.append(parts[1] if len(parts) > 1 and parts[1] in modules else INIT)
        return found
    if isinstance(node, ast.ImportFrom):
        mod = node.module or ""
        if node.level == 0:
            parts = mod.split(".")
            if parts[0] != NAME:
                return []
            parts = parts[1:]
        elif node.level == 1:
            parts = mod.split(".") if mod else []
        else:
            return []  # above the package
        if parts:
            return [parts[0] if parts[0] in modules else INIT]
        # "from . import a, b": each name a module, else the package's own name
        return [a.name if a.name in modules else INIT for a in node.names]
    return []


class _Walker(ast.NodeVisitor):
    def __init__(self, modules: Set[str]) -> None:
        self.modules = modules
        self.depth = 0  # functions around the node
        self.edges: List[Tuple[str, int, bool]] = []  # (target, line, inside a function)

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        self.edges += [(t, node.lineno, self.depth > 0) for t in _targets(node, self.modules)]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.edges += [(t, node.lineno, self.depth > 0) for t in _targets(node, self.modules)]


def import_graph(sources: Dict[str, str]) -> Tuple[Dict[str, Set[str]], List[str]]:
    """(module -> the package's modules it imports, the function-level imports
    of the package's modules as "module:line -> target") of the modules whose
    source is ``sources`` (name -> text; the package's own is ``__init__``)."""
    modules = set(sources)
    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    inner = []
    for module, text in sources.items():
        walker = _Walker(modules)
        walker.visit(ast.parse(text, filename=f"{module}.py"))
        for target, line, in_function in walker.edges:
            if target != module:
                graph[module].add(target)
            if in_function:
                inner.append(f"{module}.py:{line} -> {target}")
    return graph, inner


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One circle of ``graph`` as [a, b, ..., a], or None."""
    state: Dict[str, int] = {}  # 1 on the path, 2 done
    path: List[str] = []

    def visit(m: str) -> Optional[List[str]]:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def package_sources() -> Dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(PACKAGE.glob("*.py"))}


def test_the_package_has_no_import_circle() -> None:
    graph, _ = import_graph(package_sources())
    assert len(graph) >= 10 and graph["_context"] >= {"_buffer", "_image", "_semaphore"}
    cycle = find_cycle(graph)
    assert cycle is None, "python/vkcuda imports in a circle: " + " -> ".join(cycle or [])


def test_no_function_imports_the_package() -> None:
    _, inner = import_graph(package_sources())
    assert not inner, "imports of the package's modules inside functions:\n  " + "\n  ".join(inner)


def test_the_floor_imports_nothing_of_the_package() -> None:
    graph, _ = import_graph(package_sources())
    assert graph["_types"] == set(), graph["_types"]
    assert graph["_native"] <= {"_types"}, graph["_native"]
    # Only the package imports the package (its face): no module reaches back up into it.
    assert not [m for m, targets in graph.items() if INIT in targets], graph


def test_the_check_sees_circles_and_hidden_imports() -> None:
    """The checks above can fail: a circle through a TYPE_CHECKING import, one
    through a function-level import, and an absolute import are all seen."""
    sources = {
        INIT: "from ._a import A\n",
        "_a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B\nclass A: ...\n",
        "_b": "from . import _c\nclass B: ...\n",
        "_c": "def f():\n    from vkcuda._a import A\n    return A\n",
    }
    graph, inner = import_graph(sources)
    assert graph == {INIT: {"_a"}, "_a": {"_b"}, "_b": {"_c"}, "_c": {"_a"}}
    assert find_cycle(graph) == ["_a", "_b", "_c", "_a"]
    assert inner == ["_c.py:2 -> _a"]
    graph, inner = import_graph({INIT: "from ._a import *\n", "_a": "import json\nimport vkcuda\n"})
    assert graph["_a"] == {INIT} and find_cycle(graph) == [INIT, "_a", INIT] and not inner
    assert find_cycle({"_a": {"_b"}, "_b": set()}) is None


if __name__ == "__main__":  # python3 python/tests/test_imports.py: the graph, its circles, hidden imports
    graph, inner = import_graph(package_sources())
    for module in sorted(graph):
        print(f"{module} -> {', '.join(sorted(graph[module])) or '(nothing of the package)'}")
    cycle = find_cycle(graph)
    print(f"circles: {0 if cycle is None else 'at least 1: ' + ' -> '.join(cycle)}")
    print(f"function-level imports of the package: {len(inner)}")
    for line in inner:
        print(f"  {line}")
    raise SystemExit(1 if cycle or inner else 0)
