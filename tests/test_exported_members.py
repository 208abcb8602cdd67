"""Every module's ``__all__`` names exactly its public definitions (httpx's habit)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import sdcp_conformance

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(sdcp_conformance.__path__, "sdcp_conformance.")
    if not info.name.rsplit(".", 1)[-1].startswith("_")
)
WITH_ALL = [name for name in MODULES if hasattr(importlib.import_module(name), "__all__")]


@pytest.mark.parametrize("name", WITH_ALL)
def test_all_lists_only_existing_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    missing = [item for item in exported if not hasattr(module, item)]
    assert not missing, f"{name}.__all__ names undefined {missing}"
    assert len(set(exported)) == len(exported)


@pytest.mark.parametrize("name", WITH_ALL)
def test_public_classes_and_functions_are_exported(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    defined_here = {
        item for item, value in vars(module).items()
        if not item.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == name
    }
    assert defined_here <= exported, f"{name} defines public {sorted(defined_here - exported)} not in __all__"


def test_protocol_core_exposes_the_names_later_work_imports() -> None:
    from sdcp_conformance import protocol

    for item in ("contract_digest", "prefix_digest", "extend_digest", "verify_uniform", "encode", "decode"):
        assert callable(getattr(protocol, item))
