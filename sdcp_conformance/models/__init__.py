"""Mock models and the batched torch Llama runtime that scores tokens for verifiers and drafters.

The names below are imported on first use (PEP 562): ``models.registry``
(the manifest) and ``models.bigram`` need no torch, and a command that only
reads the manifest (``--help``, ``pki``, ``report``, ``check``) should not pay
torch's ~1.5 s import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdcp_conformance.models.bigram import bigram_logits, bigram_table
    from sdcp_conformance.models.checkpoint import Checkpoint, sha256_file
    from sdcp_conformance.models.config import LlamaConfig
    from sdcp_conformance.models.kv_cache import KVCache
    from sdcp_conformance.models.registry import load_manifest, mock_model
    from sdcp_conformance.models.runtime import LlamaRuntime

_WHERE = {
    "Checkpoint": "checkpoint", "sha256_file": "checkpoint", "KVCache": "kv_cache", "LlamaConfig": "config",
    "LlamaRuntime": "runtime", "bigram_logits": "bigram", "bigram_table": "bigram", "load_manifest": "registry",
    "mock_model": "registry",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Checkpoint",
    "KVCache",
    "LlamaConfig",
    "LlamaRuntime",
    "bigram_logits",
    "bigram_table",
    "load_manifest",
    "mock_model",
    "sha256_file",
]
