"""Shared fixtures: the committed mock models and float32 runtimes for them."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

from sdcp_conformance.models.registry import Manifest, load_manifest
from sdcp_conformance.models.runtime import LlamaRuntime

REPO = Path(__file__).resolve().parents[2]
MOCK_MODELS = REPO / "mock_models"


def load_script(name: str) -> ModuleType:
    """Import a script of mock_models/ (not a package) by path."""
    module_name = f"_mock_models_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, MOCK_MODELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look the module up while it executes
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    return load_manifest(MOCK_MODELS)


@pytest.fixture(scope="session")
def runtime(manifest: Manifest) -> Callable[..., LlamaRuntime]:
    """``runtime(model_id, dtype=torch.float32)``, loaded once per session."""
    loaded: dict[tuple[str, torch.dtype], LlamaRuntime] = {}

    def get(model_id: str, dtype: torch.dtype = torch.float32) -> LlamaRuntime:
        key = (model_id, dtype)
        if key not in loaded:
            loaded[key] = LlamaRuntime.load(manifest.model(model_id).path, dtype=dtype)
        return loaded[key]

    return get
