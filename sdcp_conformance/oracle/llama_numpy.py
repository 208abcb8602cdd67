"""The mock Llama models' forward pass in numpy: the oracle's logits for models without a closed form, no torch.

An implementation of Hugging Face ``LlamaForCausalLM`` (default RoPE, no biases, SiLU-gated MLP, RMSNorm,
grouped-query attention) written apart from the torch runtime of :mod:`sdcp_conformance.models.llama`, so
that the base install (no ``[reference]`` extra) can judge a vendor's verifier or drafter at any context and
so that the oracle is not the code that the reference stack serves with. It recomputes the whole context
causally on every call (no key/value cache: the oracle's contexts are short) in float64 from the
checkpoint's weights widened exactly to float32; ``tests/oracle/test_llama_numpy.py`` compares it with the
torch runtime in float32.

The weights are read by hand from ``model.safetensors``: the mock models are stored in bfloat16, which
numpy has no dtype for, and the ``safetensors`` package's numpy API (``safetensors.numpy.load_file``)
refuses bfloat16 tensors; the package is moreover a ``[reference]`` dependency. The format is small: an
8-byte little-endian header length N, N bytes of JSON mapping each tensor name to its ``dtype``, ``shape``
and ``data_offsets`` (begin and end, relative to the byte after the header), then the raw little-endian
bytes. A bfloat16 value is the upper half of the float32 with the same sign, exponent and leading mantissa
bits, so widening is ``uint16 << 16`` viewed as float32, exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.config import WEIGHTS_FILE, LlamaConfig, read_checkpoint_config

Array = npt.NDArray[np.float64]

_PLAIN_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}
_WIDTHS = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}
_HEADER_LIMIT = 100 << 20  # safetensors' own bound on the JSON header


def _widen_bf16(raw: bytes, count: int) -> npt.NDArray[np.float32]:
    """bfloat16 bytes to float32: each value's 16 bits become the upper half of a float32 (exact)."""
    halves = np.frombuffer(raw, dtype="<u2", count=count)
    return (halves.astype(np.uint32) << np.uint32(16)).view(np.float32)


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.float32]]:
    """Every tensor of a ``.safetensors`` file as float32 (BF16, F16, F32 and F64 are read; F64 is narrowed)."""
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise InvalidArgument(f"{path} is too short for a safetensors header")
    size = int.from_bytes(data[:8], "little")
    if size > _HEADER_LIMIT or 8 + size > len(data):
        raise InvalidArgument(f"{path} has a safetensors header length {size} past its {len(data)} bytes")
    try:
        header = json.loads(data[8:8 + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidArgument(f"{path} has no JSON safetensors header ({error})") from error
    body = memoryview(data)[8 + size:]
    tensors: dict[str, npt.NDArray[np.float32]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = entry["dtype"], tuple(int(n) for n in entry["shape"]), entry["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64))
        if dtype not in _WIDTHS:
            raise InvalidArgument(f"{path}: tensor {name} has dtype {dtype}, not a float this oracle reads")
        if not 0 <= begin <= end <= len(body) or end - begin != count * _WIDTHS[dtype]:
            raise InvalidArgument(f"{path}: tensor {name}'s data_offsets {[begin, end]} do not hold {shape} {dtype}")
        raw = bytes(body[begin:end])
        if dtype == "BF16":
            values = _widen_bf16(raw, count)
        else:
            values = np.frombuffer(raw, dtype=_PLAIN_DTYPES[dtype], count=count).astype(np.float32)
        tensors[name] = values.reshape(shape)
    return tensors


@dataclass(frozen=True)
class _Layer:
    input_norm: Array
    q: Array
    k: Array
    v: Array
    o: Array
    post_norm: Array
    gate: Array
    up: Array
    down: Array


@dataclass(frozen=True)
class NumpyLlama:
    """A ``LlamaForCausalLM`` checkpoint held as float64 arrays (each the exact value of a stored weight)."""

    config: LlamaConfig
    embed: Array
    layers: tuple[_Layer, ...]
    norm: Array
    lm_head: Array

    @classmethod
    def load(cls, folder: Path | str) -> NumpyLlama:
        """Read ``config.json`` and ``model.safetensors`` of a checkpoint folder."""
        root = Path(folder)
        config = LlamaConfig.from_hf(read_checkpoint_config(root))
        return cls.from_tensors(config, read_safetensors(root / WEIGHTS_FILE))

    @classmethod
    def from_tensors(cls, config: LlamaConfig, tensors: dict[str, npt.NDArray[np.float32]]) -> NumpyLlama:
        """Take the Hugging Face tensor names (``model.layers.0.self_attn.q_proj.weight``, ...)."""

        def get(name: str, shape: tuple[int, ...]) -> Array:
            if name not in tensors:
                raise InvalidArgument(f"checkpoint lacks tensor {name}")
            if tuple(tensors[name].shape) != shape:
                raise InvalidArgument(f"{name} has shape {tuple(tensors[name].shape)}, expected {shape}")
            return np.asarray(tensors[name], dtype=np.float64)

        c = config
        hidden, q_out, kv_out = c.hidden_size, c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
        layers = []
        for i in range(c.num_hidden_layers):
            p = f"model.layers.{i}."
            layers.append(_Layer(
                input_norm=get(p + "input_layernorm.weight", (hidden,)),
                q=get(p + "self_attn.q_proj.weight", (q_out, hidden)),
                k=get(p + "self_attn.k_proj.weight", (kv_out, hidden)),
                v=get(p + "self_attn.v_proj.weight", (kv_out, hidden)),
                o=get(p + "self_attn.o_proj.weight", (hidden, q_out)),
                post_norm=get(p + "post_attention_layernorm.weight", (hidden,)),
                gate=get(p + "mlp.gate_proj.weight", (c.intermediate_size, hidden)),
                up=get(p + "mlp.up_proj.weight", (c.intermediate_size, hidden)),
                down=get(p + "mlp.down_proj.weight", (hidden, c.intermediate_size)),
            ))
        # A tied checkpoint may omit lm_head; the embedding then serves as the output matrix.
        tied = c.tie_word_embeddings and "lm_head.weight" not in tensors
        return cls(
            config=c,
            embed=get("model.embed_tokens.weight", (c.vocab_size, hidden)),
            layers=tuple(layers),
            norm=get("model.norm.weight", (hidden,)),
            lm_head=get("model.embed_tokens.weight" if tied else "lm_head.weight", (c.vocab_size, hidden)),
        )

    def logits(self, tokens: list[int] | tuple[int, ...]) -> Array:
        """Logits ``[len(tokens), V]``: row ``j`` is the distribution's logits after ``tokens[:j + 1]``."""
        rows: Array = self.batch_logits([tokens])[0]
        return rows

    def batch_logits(self, contexts: Sequence[Sequence[int]]) -> Array:
        """Logits ``[B, T, V]`` of ``B`` contexts of one length ``T`` at once (one pass of numpy over the batch: the
        oracle asks for a token's every candidate continuation together)."""
        c = self.config
        ids = np.asarray(contexts, dtype=np.int64)
        if ids.ndim != 2 or ids.size == 0:
            raise InvalidArgument("the oracle needs non-empty contexts of one length")
        if ids.min() < 0 or ids.max() >= c.vocab_size:
            raise InvalidArgument(f"token ids must lie in [0, {c.vocab_size})")
        cos, sin = _rope(c, ids.shape[1])
        h = self.embed[ids]
        for layer in self.layers:
            h = h + _attention(c, layer, _rms_norm(h, layer.input_norm, c.rms_norm_eps), cos, sin)
            x = _rms_norm(h, layer.post_norm, c.rms_norm_eps)
            gate = x @ layer.gate.T
            h = h + (gate / (1.0 + np.exp(-gate)) * (x @ layer.up.T)) @ layer.down.T  # SiLU(gate) * up
        result: Array = _rms_norm(h, self.norm, c.rms_norm_eps) @ self.lm_head.T
        return result


def _rms_norm(x: Array, weight: Array, eps: float) -> Array:
    """``weight * x / sqrt(mean(x^2) + eps)`` over the last axis."""
    result: Array = weight * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))
    return result


def _rope(config: LlamaConfig, length: int) -> tuple[Array, Array]:
    """cos and sin ``[T, head_dim]`` of default RoPE at positions 0..T-1: inv_freq_i = 1 / theta^(2i/d), each
    frequency's angle repeated in both halves (Hugging Face's ``cat((freqs, freqs))``)."""
    d = config.head_dim
    inv_freq = 1.0 / config.rope_theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.arange(length, dtype=np.float64)[:, None] * inv_freq[None, :]
    angles = np.concatenate((angles, angles), axis=-1)
    return np.cos(angles), np.sin(angles)


def _rotate(x: Array, cos: Array, sin: Array) -> Array:
    """Hugging Face ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin``, rotate_half(x) = (-x2, x1)."""
    half = x.shape[-1] // 2
    rotated = np.concatenate((-x[..., half:], x[..., :half]), axis=-1)
    result: Array = x * cos + rotated * sin
    return result


def _attention(c: LlamaConfig, layer: _Layer, x: Array, cos: Array, sin: Array) -> Array:
    """Causal grouped-query self-attention of ``x`` ``[B, T, hidden]``; query head h reads key/value head
    h // (heads / kv_heads), as Hugging Face's ``repeat_kv`` arranges them."""
    b, t, d = x.shape[0], x.shape[1], c.head_dim
    q = (x @ layer.q.T).reshape(b, t, c.num_attention_heads, d).transpose(0, 2, 1, 3)  # [B, H, T, d]
    k = (x @ layer.k.T).reshape(b, t, c.num_key_value_heads, d).transpose(0, 2, 1, 3)  # [B, KV, T, d]
    v = (x @ layer.v.T).reshape(b, t, c.num_key_value_heads, d).transpose(0, 2, 1, 3)
    q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
    k, v = np.repeat(k, c.kv_groups, axis=1), np.repeat(v, c.kv_groups, axis=1)  # [B, H, T, d]
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)  # [B, H, T, T]
    scores = np.where(np.tri(t, dtype=bool), scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = scores / scores.sum(axis=-1, keepdims=True)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, c.num_attention_heads * d)  # heads side by side
    result: Array = out @ layer.o.T
    return result


@cache
def load_model(folder: Path) -> NumpyLlama:
    """:meth:`NumpyLlama.load`, once per folder and process."""
    return NumpyLlama.load(folder)


__all__ = ["NumpyLlama", "load_model", "read_safetensors"]
