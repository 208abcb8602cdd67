"""``pyproject.toml`` declares every package the code imports, and nothing it does not; torch and the other heavy
packages only in the extra of the commands that use them."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sdcp_conformance"

RUN_BY_PYTEST = {"pytest"}
"""``pytest_plugin.py`` is loaded by pytest itself (the ``pytest11`` entry point): pytest is there when it runs."""
EXTRA_ONLY = {"reference": {"torch", "safetensors", "tokenizers"}, "fuzz-api": {"schemathesis"}, "redis": {"redis"}}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normal(re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0])


def imported_distributions() -> set[str]:
    """The distributions whose top-level modules some module of the package imports (stdlib left out)."""
    owners = importlib.metadata.packages_distributions()
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [alias.name.partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.partition(".")[0]]
            else:
                continue
            for top in tops:
                if top in sys.stdlib_module_names or top in {"sdcp_conformance", "__future__"}:
                    continue
                assert top in owners, f"{path.relative_to(ROOT)} imports {top}, which no installed package provides"
                found |= {_normal(owner) for owner in owners[top]}
    return found


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = {_requirement_name(line) for line in project["dependencies"]}
    extras = {extra: {_requirement_name(line) for line in lines}
              for extra, lines in project["optional-dependencies"].items()}
    return base, extras


def test_every_imported_package_is_declared_and_every_declared_one_imported() -> None:
    base, extras = declared()
    user_extras = set().union(*(extras[name] for name in EXTRA_ONLY))
    imported = imported_distributions() - RUN_BY_PYTEST
    assert imported - base - user_extras == set(), "imported but not declared"
    assert base - imported == set(), "declared but never imported"
    for extra, names in EXTRA_ONLY.items():
        assert extras[extra] == names
        assert not names & base, f"{sorted(names & base)} belong in [{extra}], not the base install"


def test_the_test_extra_installs_every_user_extra() -> None:
    _, extras = declared()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "sdcp-conformance[reference,fuzz-api,redis]" in project["optional-dependencies"]["test"]
    assert {"pytest", "build"} <= extras["test"]
