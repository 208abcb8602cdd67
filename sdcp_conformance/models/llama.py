"""The Llama forward pass over a padded batch of new tokens that follow cached keys and values.

The arithmetic follows Hugging Face ``LlamaForCausalLM`` step by step
(RMSNorm in float32 then cast back, RoPE tables computed in float32 and cast
to the compute dtype, GQA with each key/value head shared by consecutive query
heads, SwiGLU MLP), so that
float32 logits agree with it to rounding and bfloat16 behaves as a typical
bfloat16 serving stack does. The weights of q/k/v and of gate/up are fused
into one matrix each, which changes no value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.placement import OnDevice


@dataclass(frozen=True)
class LayerWeights:
    """One decoder layer, with q/k/v and gate/up fused along the output dimension."""

    input_norm: torch.Tensor
    qkv: torch.Tensor
    o: torch.Tensor
    post_norm: torch.Tensor
    gate_up: torch.Tensor
    down: torch.Tensor


@dataclass(frozen=True)
class LlamaWeights(OnDevice):
    """All tensors of a ``LlamaForCausalLM``, on one device, in one dtype."""

    config: LlamaConfig
    embed: torch.Tensor
    layers: tuple[LayerWeights, ...]
    norm: torch.Tensor
    lm_head: torch.Tensor

    def _placed(self) -> torch.Tensor:
        return self.embed

    @classmethod
    def from_state_dict(
        cls,
        config: LlamaConfig,
        tensors: Mapping[str, torch.Tensor],
        *,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> LlamaWeights:
        """Take the Hugging Face tensor names (``model.layers.0.self_attn.q_proj.weight``, ...)."""

        def get(name: str, shape: tuple[int, ...]) -> torch.Tensor:
            if name not in tensors:
                raise InvalidArgument(f"checkpoint lacks tensor {name}")
            tensor = tensors[name]
            if tuple(tensor.shape) != shape:
                raise InvalidArgument(f"{name} has shape {tuple(tensor.shape)}, expected {shape}")
            return tensor.to(device=device, dtype=dtype)

        c = config
        q_out, kv_out = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
        layers = []
        for i in range(c.num_hidden_layers):
            p = f"model.layers.{i}."
            attn = [get(p + f"self_attn.{n}_proj.weight", (size, c.hidden_size))
                    for n, size in (("q", q_out), ("k", kv_out), ("v", kv_out))]
            mlp = [get(p + f"mlp.{n}_proj.weight", (c.intermediate_size, c.hidden_size))
                   for n in ("gate", "up")]
            layers.append(LayerWeights(
                input_norm=get(p + "input_layernorm.weight", (c.hidden_size,)),
                qkv=torch.cat(attn).contiguous(),
                o=get(p + "self_attn.o_proj.weight", (c.hidden_size, q_out)),
                post_norm=get(p + "post_attention_layernorm.weight", (c.hidden_size,)),
                gate_up=torch.cat(mlp).contiguous(),
                down=get(p + "mlp.down_proj.weight", (c.hidden_size, c.intermediate_size)),
            ))
        embed = get("model.embed_tokens.weight", (c.vocab_size, c.hidden_size))
        # A tied checkpoint may omit lm_head; the embedding then serves as the output matrix.
        tied = c.tie_word_embeddings and "lm_head.weight" not in tensors
        head_name = "model.embed_tokens.weight" if tied else "lm_head.weight"
        return cls(
            config=c,
            embed=embed,
            layers=tuple(layers),
            norm=get("model.norm.weight", (c.hidden_size,)),
            lm_head=get(head_name, (c.vocab_size, c.hidden_size)),
        )


@dataclass(frozen=True)
class BatchInput:
    """One padded forward pass: ``B`` sessions, up to ``T`` new tokens, up to ``P`` cached ones.

    ``past`` is ``[layers, 2, B, kv_heads, P, head_dim]`` (or ``None`` when
    ``P`` is 0); ``mask[b, 0, i, j]`` is true where new token ``i`` of session
    ``b`` may attend to key ``j`` (keys: ``P`` cached, then ``T`` new).
    """

    tokens: torch.Tensor
    positions: torch.Tensor
    past: torch.Tensor | None
    mask: torch.Tensor


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Hugging Face ``LlamaRMSNorm``: normalise in float32, cast back, then scale."""
    x32 = x.to(torch.float32)
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)


def rope_tables(
    config: LlamaConfig, positions: torch.Tensor, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of default RoPE for ``positions`` ``[B, T]``, shaped ``[B, 1, T, head_dim]``."""
    d = config.head_dim
    exponents = torch.arange(0, d, 2, dtype=torch.int64, device=positions.device).float() / d
    inv_freq = 1.0 / (config.rope_theta ** exponents)
    freqs = positions[..., None].float() * inv_freq
    angles = torch.cat((freqs, freqs), dim=-1)
    return angles.cos().to(dtype)[:, None], angles.sin().to(dtype)[:, None]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + _rotate_half(x) * sin


def _attention(
    weights: LlamaWeights,
    layer: LayerWeights,
    x: torch.Tensor,
    rope: tuple[torch.Tensor, torch.Tensor],
    past: torch.Tensor | None,
    mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention of the new tokens; returns the output and their rotated keys/values."""
    c = weights.config
    b, t, _ = x.shape
    qkv = F.linear(x, layer.qkv).view(b, t, c.num_attention_heads + 2 * c.num_key_value_heads,
                                      c.head_dim).transpose(1, 2)
    q, k, v = torch.split(
        qkv, [c.num_attention_heads, c.num_key_value_heads, c.num_key_value_heads], dim=1)
    q, k = _apply_rope(q, *rope), _apply_rope(k, *rope)
    new_kv = torch.stack((k, v))
    if past is not None:
        k, v = torch.cat((past[0], k), dim=2), torch.cat((past[1], v), dim=2)
    # enable_gqa lets query head h read key/value head h // groups, as repeat_kv does in HF.
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=c.kv_groups > 1)
    return F.linear(out.transpose(1, 2).reshape(b, t, -1), layer.o), new_kv


def _mlp(layer: LayerWeights, x: torch.Tensor) -> torch.Tensor:
    gate, up = F.linear(x, layer.gate_up).chunk(2, dim=-1)
    return F.linear(F.silu(gate) * up, layer.down)


def forward(weights: LlamaWeights, batch: BatchInput) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits ``[B, T, V]`` (float32) and the new keys/values ``[layers, 2, B, kv_heads, T, d]``."""
    c = weights.config
    h = F.embedding(batch.tokens, weights.embed)
    rope = rope_tables(c, batch.positions, weights.dtype)
    new_kv = []
    for i, layer in enumerate(weights.layers):
        past = None if batch.past is None else batch.past[i]
        attn, layer_kv = _attention(weights, layer, rms_norm(h, layer.input_norm, c.rms_norm_eps),
                                    rope, past, batch.mask)
        h = h + attn
        h = h + _mlp(layer, rms_norm(h, layer.post_norm, c.rms_norm_eps))
        new_kv.append(layer_kv)
    logits = F.linear(rms_norm(h, weights.norm, c.rms_norm_eps), weights.lm_head)
    return logits.float(), torch.stack(new_kv)


__all__ = ["BatchInput", "LayerWeights", "LlamaWeights", "forward", "rms_norm", "rope_tables"]
