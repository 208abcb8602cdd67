"""The package's layers: no import cycle between its packages, counting imports inside functions, and no package
but ``cli/`` importing command-line code (the one role layer).

A package here is a folder directly under ``sdcp_conformance/`` or a top-level module (``errors``, ``seeds``, …).
The graph is read from the source with :mod:`ast`, so an import hidden in a function counts like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import sdcp_conformance

ROOT = Path(sdcp_conformance.__file__).parent
PACKAGE = "sdcp_conformance"


def _unit(root: Path, path: Path) -> str:
    relative = path.relative_to(root)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _imported(root: Path, path: Path, tree: ast.Module) -> Iterator[tuple[str, int]]:
    """(dotted module under the package, line) of every import of the package in ``tree``, wherever it stands."""
    here = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importing module's package upwards
                base = here[:-node.level] if path.name != "__init__.py" else here[:len(here) - node.level]
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != PACKAGE:
                continue
            if module == PACKAGE:  # from sdcp_conformance import errors, seeds, …
                for alias in node.names:
                    yield f"{PACKAGE}.{alias.name}", node.lineno
            else:
                yield module, node.lineno


def import_graph(root: Path) -> dict[str, dict[str, list[str]]]:
    """Package → imported package → where (``file:line``), for every ``*.py`` below ``root``."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(root.rglob("*.py")):
        unit = _unit(root, path)
        graph.setdefault(unit, {})
        for module, line in _imported(root, path, ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            if len(parts) < 2 or parts[1] == unit or parts[1] == "__init__":
                continue
            graph[unit].setdefault(parts[1], []).append(f"{path.relative_to(root)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, {}):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _explain(graph: dict[str, dict[str, list[str]]], component: list[str]) -> str:
    return "; ".join(f"{a} -> {b} at {graph[a][b][:3]}" for a in component for b in component
                     if b in graph.get(a, {}))


def test_no_import_cycle_between_packages_counting_imports_in_functions() -> None:
    graph = import_graph(ROOT)
    assert {"harness", "suites", "judge", "protocol", "cli"} <= set(graph), "the walk found the packages"
    assert "harness" in graph["suites"], "the walk sees the imports it must see"
    found = cycles(graph)
    assert not found, "\n".join(_explain(graph, component) for component in found)


FRONT_ENDS = {"cli", "pytest_plugin"}
"""What users run: the commands and the pytest plugin (which shares the commands' seed range)."""


def test_only_the_front_ends_import_command_line_code() -> None:
    graph = import_graph(ROOT)
    importers = {unit: where["cli"] for unit, where in graph.items() if "cli" in where and unit not in FRONT_ENDS}
    assert not importers, importers


def test_every_command_module_lives_under_cli() -> None:
    stray = [str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")
             if _unit(ROOT, path) != "cli" and ("cli" in path.stem.split("_") or "import click" in path.read_text())]
    assert not stray, f"command-line modules outside cli/: {stray}"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / PACKAGE


def test_the_walk_finds_a_cycle_hidden_in_a_function_and_a_relative_one(tmp_path: Path) -> None:
    hidden = _write(tmp_path / "hidden", {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from sdcp_conformance.high.b import g\n    return g\n",
        "high/__init__.py": "",
        "high/b.py": "from sdcp_conformance.low import a\n",
    })
    assert cycles(import_graph(hidden)) == [["high", "low"]]
    relative = _write(tmp_path / "relative", {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from ..high import b\n",
        "high/__init__.py": "",
        "high/b.py": "import sdcp_conformance.low.a\n",
        "top.py": "from sdcp_conformance import low\n",
    })
    graph = import_graph(relative)
    assert cycles(graph) == [["high", "low"]]
    assert "low" in graph["top"]
    layered = _write(tmp_path / "layered", {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "import json\n",
        "high/__init__.py": "",
        "high/b.py": "def f():\n    from sdcp_conformance.low.a import json\n",
    })
    assert cycles(import_graph(layered)) == []
