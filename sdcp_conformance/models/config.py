"""The subset of a Hugging Face Llama ``config.json`` that the runtime implements."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument

DEFAULT_ROPE_THETA = 10000.0


@dataclass(frozen=True)
class LlamaConfig:
    """Shape and constants of a ``LlamaForCausalLM`` with default RoPE and no biases."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float = DEFAULT_ROPE_THETA
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False

    def __post_init__(self) -> None:
        positive = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                    "num_attention_heads", "num_key_value_heads", "head_dim")
        for name in positive:
            if getattr(self, name) < 1:
                raise InvalidArgument(f"config {name} must be positive")
        if self.num_attention_heads % self.num_key_value_heads:
            raise InvalidArgument("num_attention_heads must be a multiple of num_key_value_heads")
        if self.head_dim % 2:
            raise InvalidArgument("RoPE needs an even head_dim")

    @property
    def kv_groups(self) -> int:
        """Query heads that share one key/value head (GQA)."""
        return self.num_attention_heads // self.num_key_value_heads

    @classmethod
    def from_hf(cls, raw: Mapping[str, Any]) -> LlamaConfig:
        """Read a Hugging Face Llama config, refusing features this runtime does not implement."""
        if raw.get("model_type", "llama") != "llama":
            raise InvalidArgument(f"model_type {raw.get('model_type')!r} is not llama")
        for flag in ("attention_bias", "mlp_bias"):
            if raw.get(flag):
                raise InvalidArgument(f"{flag} is not supported")
        if raw.get("hidden_act", "silu") != "silu":
            raise InvalidArgument("only hidden_act 'silu' (SwiGLU) is supported")
        heads = int(raw["num_attention_heads"])
        return cls(
            vocab_size=int(raw["vocab_size"]),
            hidden_size=int(raw["hidden_size"]),
            intermediate_size=int(raw["intermediate_size"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(raw.get("num_key_value_heads") or heads),
            head_dim=int(raw.get("head_dim") or int(raw["hidden_size"]) // heads),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            rope_theta=_rope_theta(raw),
            max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rope_theta(raw: Mapping[str, Any]) -> float:
    """Accept the legacy ``rope_theta``/``rope_scaling`` keys and transformers 5's ``rope_parameters``."""
    params = raw.get("rope_parameters") or {}
    scaling = raw.get("rope_scaling") or {}
    rope_type = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type")
    if rope_type not in (None, "default"):
        raise InvalidArgument(f"rope type {rope_type!r} is not supported (default RoPE only)")
    return float(params.get("rope_theta", raw.get("rope_theta", DEFAULT_ROPE_THETA)))


CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


def read_checkpoint_config(folder: Path) -> dict[str, Any]:
    """The raw ``config.json`` of a checkpoint folder, which must hold it and ``model.safetensors``."""
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (folder / name).is_file():
            raise InvalidArgument(f"{folder} has no {name}")
    raw: dict[str, Any] = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    return raw


__all__ = ["CONFIG_FILE", "DEFAULT_ROPE_THETA", "WEIGHTS_FILE", "LlamaConfig", "read_checkpoint_config"]
