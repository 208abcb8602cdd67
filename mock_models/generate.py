"""Deterministic generator of the SDCP mock models (profile P1-MODEL-1): checkpoints and manifest.

Run from the repository root::

    python mock_models/generate.py            # rewrite the committed files in place
    python mock_models/generate.py --out DIR  # write a fresh copy elsewhere

Every weight is an integer times a power of two drawn from SHAKE-256 of a
text label (``sdcp_conformance.models.detrand``), so the bytes are the same on
every machine and with every library version that keeps its file formats.
Greedy prompts for the ``ctx`` model are chosen by running the float32
runtime; see ``mock_models/README.md`` and :mod:`greedy`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from sdcp_conformance.models.bigram import (
    BIGRAM_DRAFT_FAR,
    BIGRAM_DRAFT_NEAR,
    BIGRAM_TARGET,
    FIRST_WORD,
    LOGIT_DENOMINATOR,
    VOCAB_SIZE,
    bigram_table,
)
from sdcp_conformance.models.detrand import hash_ints, hash_permutation
from sdcp_conformance.models.greedy import GreedyRun, greedy_runs
from sdcp_conformance.models.runtime import LlamaRuntime

MANIFEST_FORMAT = 1
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
_WORD_TEXT = (
    "the a an and or but of to in on at by for with from is was are be have do not no yes "
    "it this that he she they we you i me my your who what when where how all some many more "
    "few one two three four five six cat dog bird fish tree house car road city river sea sky "
    "sun moon star rain snow wind fire water stone red blue green black white big small old new "
    "good bad fast slow hot cold long short run walk see look go come make take give find think "
    "know say tell eat drink sleep read write play day night time home way man woman child "
    "world hand eye . , ? !"
)
WORDS = tuple(_WORD_TEXT.split())

BIGRAM_HIDDEN = 256
"""D-MODEL-1: bigram hidden size. Embedding row t is 16 * onehot(t) in 256 dims, whose mean
square is exactly 1, so RMSNorm (eps 1e-10, lost in float32 rounding of 1 + eps) multiplies
by exactly 1; the final norm weight 1/16 then yields onehot(t) and lm_head column t holds
table row t: logits equal the table exactly in float32 and in bfloat16."""
BIGRAM_EMBED = 16.0
BIGRAM_EPS = 1e-10


@dataclass(frozen=True)
class Shape:
    """The Llama dimensions of one mock model."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    eps: float = 1e-5


CTX_SHAPE = Shape(hidden=128, intermediate=384, layers=4, heads=4, kv_heads=2, head_dim=32)
FAR_SHAPE = Shape(hidden=64, intermediate=192, layers=2, heads=4, kv_heads=1, head_dim=16)
BIGRAM_SHAPE = Shape(hidden=BIGRAM_HIDDEN, intermediate=128, layers=1, heads=4, kv_heads=2,
                     head_dim=64, eps=BIGRAM_EPS)

# Half-widths of the uniform weight distributions, relative to 1/sqrt(fan_in) (see README).
QK_GAIN = 1.0
LM_HEAD_GAIN = 1.5
RESIDUAL_GAIN = 0.55
"""Scales the attention and MLP outputs: how far the context moves the residual stream."""
BACKBONE = 0.7
"""Weight of the successor's output row in each ctx embedding (the rest is random)."""
NEAR_NOISE = 0.1
"""Noise of ctx-draft-near, as a fraction of each weight's half-width."""


def _quantised_uniform(label: str, shape: tuple[int, ...], half_width: float) -> torch.Tensor:
    """Uniform in [-half_width, half_width] on a grid k * 2^-e with |k| <= 255 (exact in bf16)."""
    exponent = math.floor(math.log2(255 / half_width))
    bound = math.floor(half_width * 2.0**exponent)
    ints = hash_ints(label, math.prod(shape), -bound, bound).reshape(shape)
    return _scaled(ints, exponent)


def _scaled(ints: np.ndarray[Any, Any], exponent: int) -> torch.Tensor:
    values = torch.from_numpy(ints.astype(np.float32) * np.float32(2.0**-exponent))
    return values.to(torch.bfloat16)


def _norm_weight(label: str, size: int) -> torch.Tensor:
    """RMSNorm weights in [0.5, 1.5], so a runtime that ignores them fails the cross-check."""
    return _scaled(hash_ints(label, size, 64, 192), 7)


def _tensor_shapes(shape: Shape) -> dict[str, tuple[tuple[int, ...], float]]:
    """Hugging Face tensor name -> (shape, uniform half-width)."""
    h, i = shape.hidden, shape.intermediate
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    fan_h, fan_i = math.sqrt(3 / h), math.sqrt(3 / i)
    out: dict[str, tuple[tuple[int, ...], float]] = {
        "model.embed_tokens.weight": ((VOCAB_SIZE, h), 1.0),
        "lm_head.weight": ((VOCAB_SIZE, h), LM_HEAD_GAIN * fan_h),
    }
    for n in range(shape.layers):
        p = f"model.layers.{n}."
        out[p + "self_attn.q_proj.weight"] = ((q, h), QK_GAIN * fan_h)
        out[p + "self_attn.k_proj.weight"] = ((kv, h), QK_GAIN * fan_h)
        out[p + "self_attn.v_proj.weight"] = ((kv, h), fan_h)
        out[p + "self_attn.o_proj.weight"] = ((h, q), RESIDUAL_GAIN * math.sqrt(3 / q))
        out[p + "mlp.gate_proj.weight"] = ((i, h), fan_h)
        out[p + "mlp.up_proj.weight"] = ((i, h), fan_h)
        out[p + "mlp.down_proj.weight"] = ((h, i), RESIDUAL_GAIN * fan_i)
    return out


def _norm_names(shape: Shape) -> list[str]:
    names = [f"model.layers.{n}.{k}.weight" for n in range(shape.layers)
             for k in ("input_layernorm", "post_attention_layernorm")]
    return [*names, "model.norm.weight"]


def random_llama(model_id: str, shape: Shape) -> dict[str, torch.Tensor]:
    """Seeded random weights of a ``ctx``-family model."""
    tensors = {name: _quantised_uniform(f"{model_id}/{name}", dims, half)
               for name, (dims, half) in _tensor_shapes(shape).items()}
    for name in _norm_names(shape):
        tensors[name] = _norm_weight(f"{model_id}/{name}", shape.hidden)
    return tensors


def successor(model_id: str) -> list[int]:
    """D-MODEL-2: the backbone's next token for each token: one cycle through all words."""
    order = [FIRST_WORD + i for i in hash_permutation(f"{model_id}/successor", VOCAB_SIZE - FIRST_WORD)]
    nxt = {order[i]: order[(i + 1) % len(order)] for i in range(len(order))}
    nxt.update({special: order[special] for special in range(FIRST_WORD)})
    return [nxt[t] for t in range(VOCAB_SIZE)]


def backbone_llama(model_id: str, shape: Shape) -> dict[str, torch.Tensor]:
    """Random weights whose embedding of token t leans towards lm_head row successor(t).

    The residual stream of a token then starts aligned with its successor's
    output row, so the successor usually wins by a wide margin while the
    attention layers move the whole distribution with the context.
    """
    tensors = random_llama(model_id, shape)
    head = tensors["lm_head.weight"].float()
    aligned = head[successor(model_id)] / head.abs().max()
    embed = BACKBONE * aligned + (1 - BACKBONE) * tensors["model.embed_tokens.weight"].float()
    tensors["model.embed_tokens.weight"] = embed.to(torch.bfloat16)
    return tensors


def perturbed_llama(base_id: str, model_id: str, shape: Shape) -> dict[str, torch.Tensor]:
    """``base_id``'s weights plus uniform noise of NEAR_NOISE of each half-width (a close drafter)."""
    tensors = backbone_llama(base_id, shape)
    for name, (dims, half) in _tensor_shapes(shape).items():
        noise = _quantised_uniform(f"{model_id}/noise/{name}", dims, NEAR_NOISE * half)
        tensors[name] = (tensors[name].float() + noise.float()).to(torch.bfloat16)
    return tensors


def bigram_llama(model_id: str) -> dict[str, torch.Tensor]:
    """A Llama whose logits after token t are ``bigram_table(model_id)[t]`` exactly (D-MODEL-1)."""
    shape = BIGRAM_SHAPE
    tensors = random_llama(model_id, shape)
    embed = torch.zeros(VOCAB_SIZE, shape.hidden)
    embed[:, :VOCAB_SIZE] = BIGRAM_EMBED * torch.eye(VOCAB_SIZE)
    head = torch.zeros(VOCAB_SIZE, shape.hidden)
    head[:, :VOCAB_SIZE] = torch.from_numpy(bigram_table(model_id).T.astype(np.float32))
    tensors["model.embed_tokens.weight"] = embed.to(torch.bfloat16)
    tensors["lm_head.weight"] = head.to(torch.bfloat16)
    tensors["model.norm.weight"] = torch.full((shape.hidden,), 1 / BIGRAM_EMBED,
                                              dtype=torch.bfloat16)
    # Zero attention and MLP outputs leave the residual stream equal to the embedding.
    tensors["model.layers.0.self_attn.o_proj.weight"].zero_()
    tensors["model.layers.0.mlp.down_proj.weight"].zero_()
    return tensors


def hf_config(shape: Shape) -> dict[str, Any]:
    """A ``config.json`` that transformers 4.x/5.x and other Llama engines read alike."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "hidden_size": shape.hidden,
        "initializer_range": 0.02,
        "intermediate_size": shape.intermediate,
        "max_position_embeddings": 4096,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": shape.heads,
        "num_hidden_layers": shape.layers,
        "num_key_value_heads": shape.kv_heads,
        "pretraining_tp": 1,
        "rms_norm_eps": shape.eps,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "vocab_size": VOCAB_SIZE,
    }


@dataclass(frozen=True)
class ModelSpec:
    """One mock model: manifest id, role, the target it drafts for, shape and weight builder."""

    model_id: str
    role: str
    shape: Shape
    build: Callable[[], dict[str, torch.Tensor]]
    drafts_for: str | None = None
    closed_form: str | None = None
    description: str = ""


MODELS = (
    ModelSpec(BIGRAM_TARGET, "target", BIGRAM_SHAPE, lambda: bigram_llama(BIGRAM_TARGET),
              closed_form="bigram", description="logits = bigram_table('bigram')[last token]"),
    ModelSpec(BIGRAM_DRAFT_NEAR, "draft", BIGRAM_SHAPE, lambda: bigram_llama(BIGRAM_DRAFT_NEAR),
              drafts_for=BIGRAM_TARGET, closed_form="bigram",
              description="the target's table; rows t % 4 != 0 perturbed by at most 0.25"),
    ModelSpec(BIGRAM_DRAFT_FAR, "draft", BIGRAM_SHAPE, lambda: bigram_llama(BIGRAM_DRAFT_FAR),
              drafts_for=BIGRAM_TARGET, closed_form="bigram",
              description="an independent random table (poor drafter)"),
    ModelSpec("ctx", "target", CTX_SHAPE, lambda: backbone_llama("ctx", CTX_SHAPE),
              description="random Llama, 4 layers, GQA 4/2 heads, RoPE; depends on all context"),
    ModelSpec("ctx-draft-near", "draft", CTX_SHAPE,
              lambda: perturbed_llama("ctx", "ctx-draft-near", CTX_SHAPE), drafts_for="ctx",
              description="ctx weights plus small uniform noise (close drafter)"),
    ModelSpec("ctx-draft-far", "draft", FAR_SHAPE, lambda: random_llama("ctx-draft-far", FAR_SHAPE),
              drafts_for="ctx", description="independent random 2-layer Llama (poor drafter)"),
)


def build_tokenizer() -> Tokenizer:
    """A WordLevel tokenizer with exactly VOCAB_SIZE tokens: three specials, then WORDS."""
    vocab = {token: i for i, token in enumerate((*SPECIAL_TOKENS, *WORDS))}
    if len(vocab) != VOCAB_SIZE:
        raise AssertionError(f"vocabulary has {len(vocab)} tokens, not {VOCAB_SIZE}")
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    return tokenizer


def json_bytes(value: Any) -> bytes:
    """Canonical JSON: sorted keys, two-space indent, trailing newline."""
    return (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def tokenizer_bytes() -> bytes:
    return json_bytes(json.loads(build_tokenizer().to_str()))


def tokenizer_config() -> dict[str, Any]:
    """Lets ``AutoTokenizer`` load the folder; the SDCP hashes do not cover it."""
    return {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
            "model_max_length": 4096, "tokenizer_class": "PreTrainedTokenizerFast"}


def write_model(spec: ModelSpec, out: Path, tokenizer: bytes) -> dict[str, Any]:
    """Write one checkpoint folder and return its manifest entry."""
    folder = out / spec.model_id
    folder.mkdir(parents=True, exist_ok=True)
    weights = save(spec.build(), metadata={"format": "pt"})
    files = {
        "config.json": json_bytes(hf_config(spec.shape)),
        "model.safetensors": weights,
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": json_bytes(tokenizer_config()),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return {
        "id": spec.model_id,
        "role": spec.role,
        "path": spec.model_id,
        "drafts_for": spec.drafts_for,
        "closed_form": spec.closed_form,
        "description": spec.description,
        "model_sha256": hashlib.sha256(weights).hexdigest(),
        "tokenizer_sha256": hashlib.sha256(tokenizer).hexdigest(),
        "vocab_size": VOCAB_SIZE,
        "parameters": _parameter_count(spec.shape),
        "bytes": {name: len(data) for name, data in files.items()},
    }


def _parameter_count(shape: Shape) -> int:
    dims = [d for d, _ in _tensor_shapes(shape).values()]
    return sum(math.prod(d) for d in dims) + shape.hidden * (2 * shape.layers + 1)


def generate(out: Path, *, prompts: bool = True) -> None:
    """Write every checkpoint, ``greedy_prompts.json`` and ``manifest.json`` under ``out``."""
    tokenizer = tokenizer_bytes()
    entries = [write_model(spec, out, tokenizer) for spec in MODELS]
    manifest = {
        "format": MANIFEST_FORMAT,
        "vocab_size": VOCAB_SIZE,
        "logit_denominator": LOGIT_DENOMINATOR,
        "tokenizer_sha256": hashlib.sha256(tokenizer).hexdigest(),
        "models": entries,
        "greedy_prompts": "greedy_prompts.json",
    }
    if prompts:
        (out / "greedy_prompts.json").write_bytes(json_bytes(select_greedy_prompts(out / "ctx")))
    (out / "manifest.json").write_bytes(json_bytes(manifest))


GREEDY_MARGIN = 0.5
"""D-MODEL-3: least top-1 minus top-2 float32 logit margin at every greedy step of a kept prompt.

Measured (``python mock_models/measure_bf16.py``): the largest |bf16 - float32| logit
difference of the ctx model over random contexts and the greedy trajectories is about
0.1 (this runtime and transformers, eager and sdpa); a flip needs errors summing to the
margin, so 0.5 leaves a factor of at least 4 over the largest observed error per logit."""
GREEDY_STEPS = 64
GREEDY_PROMPTS = 16
GREEDY_CANDIDATES = 2048
GREEDY_CHUNK = 128
MARGIN_GUARD = 1e-4
"""No evaluated margin may lie this close to GREEDY_MARGIN (float32 differences are ~1e-6)."""


def candidate_prompts() -> list[list[int]]:
    """Word-only prompts of 4 to 12 tokens (no punctuation, so text and tokens round-trip)."""
    first_alpha, last_alpha = FIRST_WORD, FIRST_WORD + WORDS.index(".") - 1
    prompts = []
    for n in range(GREEDY_CANDIDATES):
        length = int(hash_ints(f"ctx/prompt/{n}/length", 1, 4, 12)[0])
        prompts.append(hash_ints(f"ctx/prompt/{n}/tokens", length, first_alpha, last_alpha).tolist())
    return prompts


def _check_no_margin_near_threshold(runs: list[GreedyRun]) -> None:
    """Selection must not hinge on float32 rounding, which may differ between machines."""
    for run in runs:
        if any(abs(m - GREEDY_MARGIN) < MARGIN_GUARD for m in run.margins):
            raise AssertionError(f"prompt {run.prompt} has a margin within {MARGIN_GUARD} of "
                                 f"{GREEDY_MARGIN}; choose another GREEDY_MARGIN")


def select_greedy_prompts(ctx_folder: Path) -> dict[str, Any]:
    """The first GREEDY_PROMPTS candidates whose float32 greedy run keeps GREEDY_MARGIN."""
    runtime = LlamaRuntime.load(ctx_folder, dtype=torch.float32)
    tokenizer = build_tokenizer()
    kept: list[GreedyRun] = []
    candidates = candidate_prompts()
    # Chunks keep the batch small; the kept list is the same as from one pass over all.
    for start in range(0, len(candidates), GREEDY_CHUNK):
        runs = greedy_runs(runtime, candidates[start : start + GREEDY_CHUNK], GREEDY_STEPS,
                           stop_below=GREEDY_MARGIN)
        _check_no_margin_near_threshold(runs)
        kept += [run for run in runs
                 if len(run.tokens) == GREEDY_STEPS and run.min_margin >= GREEDY_MARGIN]
        if len(kept) >= GREEDY_PROMPTS:
            break
    if len(kept) < GREEDY_PROMPTS:
        raise AssertionError(f"only {len(kept)} candidates keep the margin {GREEDY_MARGIN}")
    kept = kept[:GREEDY_PROMPTS]
    return {
        "model": "ctx",
        "margin": GREEDY_MARGIN,
        "steps": GREEDY_STEPS,
        "prompts": [{"text": tokenizer.decode(list(run.prompt)), "tokens": list(run.prompt),
                     "greedy": list(run.tokens)} for run in kept],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--skip-prompts", action="store_true",
                        help="write checkpoints and manifest only (fast)")
    args = parser.parse_args(argv)
    torch.set_num_threads(min(torch.get_num_threads(), 4))
    generate(args.out, prompts=not args.skip_prompts)


if __name__ == "__main__":
    main()
