"""Batched verification throughput of the Llama runtime: target positions scored per second.

Each session holds a committed prefix in its KV cache and, per pass, scores
one pending token plus an M-token proposal (p[1..M+1], draft §6.3), then
rolls back, as a verifier does after rejecting everything. Prefix lengths
differ between sessions so the padded batch path is measured.

    python benchmarks/bench_runtime.py                       # ctx mock model, CPU, float32
    python benchmarks/bench_runtime.py --synthetic-100m --device cuda --dtype bfloat16
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Sequence

import torch

from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.kv_cache import KVCache
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.models.runtime import LlamaRuntime

SYNTHETIC_100M = LlamaConfig(
    vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
    num_attention_heads=12, num_key_value_heads=4, head_dim=64, rms_norm_eps=1e-5,
)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def synthetic_tensors(config: LlamaConfig, device: str) -> dict[str, torch.Tensor]:
    """Random Hugging Face-named tensors of a Llama with ``config`` (values do not matter here)."""
    generator = torch.Generator(device=device).manual_seed(0)
    h, i = config.hidden_size, config.intermediate_size
    q, kv = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    shapes = {"model.embed_tokens.weight": (config.vocab_size, h),
              "lm_head.weight": (config.vocab_size, h), "model.norm.weight": (h,)}
    for n in range(config.num_hidden_layers):
        p = f"model.layers.{n}."
        shapes |= {p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
                   p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
                   p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h),
                   p + "mlp.down_proj.weight": (h, i), p + "input_layernorm.weight": (h,),
                   p + "post_attention_layernorm.weight": (h,)}
    return {name: torch.randn(shape, generator=generator, device=device) * 0.02 + (len(shape) == 1)
            for name, shape in shapes.items()}


def parameter_count(runtime: LlamaRuntime) -> int:
    w = runtime.weights
    tensors = [w.embed, w.norm, w.lm_head] + [t for layer in w.layers for t in vars(layer).values()]
    return sum(t.numel() for t in tensors)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(runtime: LlamaRuntime, batch: int, prefix: int, proposal: int,
            min_seconds: float) -> tuple[float, int]:
    """Positions scored per second for ``batch`` sessions, and the passes timed."""
    rng = random.Random(batch)
    vocab = runtime.config.vocab_size
    caches: list[KVCache] = [runtime.new_cache() for _ in range(batch)]
    lengths = [prefix + 4 * (b % 8) for b in range(batch)]  # different lengths: padding is real
    runtime.score_batch(caches, [[rng.randrange(vocab) for _ in range(n)] for n in lengths])
    fed: Sequence[list[int]] = [[rng.randrange(vocab) for _ in range(proposal + 1)]
                                for _ in range(batch)]

    def one_pass() -> None:
        runtime.score_batch(caches, fed)
        for cache, n in zip(caches, lengths, strict=True):
            cache.truncate(n)

    one_pass()  # warm-up: allocations, kernel selection
    synchronize(runtime.device)
    passes, start = 0, time.perf_counter()
    while True:
        one_pass()
        passes += 1
        synchronize(runtime.device)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and passes >= 3:
            return batch * (proposal + 1) * passes / elapsed, passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ctx", help="mock model id (default ctx)")
    parser.add_argument("--synthetic-100m", action="store_true",
                        help="a random ~125M-parameter Llama built in memory instead")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--batches", default="1,8,64")
    parser.add_argument("--prefix", type=int, default=128, help="committed tokens per session")
    parser.add_argument("--proposal", type=int, default=6, help="M proposed tokens per session")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum timing per batch size")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = DTYPES[args.dtype]
    if args.synthetic_100m:
        name = "synthetic-100m"
        runtime = LlamaRuntime.from_tensors(SYNTHETIC_100M, synthetic_tensors(SYNTHETIC_100M,
                                            args.device), args.device, dtype)
    else:
        name = args.model
        runtime = LlamaRuntime.load(mock_model(args.model).path, args.device, dtype)
    print(f"model {name} ({parameter_count(runtime) / 1e6:.1f}M parameters), device "
          f"{runtime.device}, {args.dtype}, torch threads {torch.get_num_threads()}, "
          f"prefix {args.prefix}..{args.prefix + 28}, M = {args.proposal} (M+1 positions/session)")
    print(f"{'batch':>6} {'passes':>7} {'positions/s':>12} {'vs batch 1':>11}")
    base = math.nan
    for batch in (int(b) for b in args.batches.split(",")):
        rate, passes = measure(runtime, batch, args.prefix, args.proposal, args.seconds)
        base = rate if math.isnan(base) else base
        print(f"{batch:>6} {passes:>7} {rate:>12.0f} {rate / base:>10.1f}x")


if __name__ == "__main__":
    main()
