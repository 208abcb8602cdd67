"""The runtime benchmark script still runs (tiny sizes; no timing is asserted)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType

import torch

from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.runtime import LlamaRuntime

from .conftest import REPO


def bench() -> ModuleType:
    name = "_bench_runtime"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "bench_runtime.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_measure_scores_and_rolls_back(runtime: Callable[..., LlamaRuntime]) -> None:
    rate, passes = bench().measure(runtime("ctx-draft-far"), batch=3, prefix=5, proposal=2,
                                   min_seconds=0.0)
    assert rate > 0 and passes >= 3


def test_synthetic_tensors_build_a_complete_llama() -> None:
    config = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=4,
                         rms_norm_eps=1e-5)
    model = LlamaRuntime.from_tensors(config, bench().synthetic_tensors(config, "cpu"))
    rows = model.logits([1, 2, 3])
    assert rows.shape == (3, 50) and bool(torch.isfinite(rows).all())
    assert bench().parameter_count(model) == 50 * 16 * 2 + 16 * 5 + 2 * (
        16 * 16 + 2 * 8 * 16 + 16 * 16 + 3 * 24 * 16)
