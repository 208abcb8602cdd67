"""Mock models and the batched torch Llama runtime that scores tokens for verifiers and drafters."""

from sdcp_conformance.models.bigram import bigram_logits, bigram_table
from sdcp_conformance.models.checkpoint import Checkpoint, sha256_file
from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.kv_cache import KVCache
from sdcp_conformance.models.registry import load_manifest, mock_model
from sdcp_conformance.models.runtime import LlamaRuntime

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
