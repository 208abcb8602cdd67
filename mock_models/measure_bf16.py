"""Measure how far bfloat16 logits of the ctx model stray from float32 (the basis of D-MODEL-3).

Run from the repository root (needs ``transformers`` for the second and third stacks)::

    python mock_models/measure_bf16.py [--contexts 128] [--length 96]

Prints, per bfloat16 stack, the largest |logit_bf16 - logit_fp32| over every
position of random contexts and of the committed greedy trajectories, and the
ratio of the greedy margin to that error.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from sdcp_conformance.models.detrand import hash_ints
from sdcp_conformance.models.runtime import LlamaRuntime

HERE = Path(__file__).resolve().parent
Scorer = Callable[[Sequence[Sequence[int]]], list[torch.Tensor]]


def contexts(count: int, length: int) -> list[list[int]]:
    """Seeded random contexts plus every greedy prompt followed by its greedy continuation."""
    randoms = [hash_ints(f"measure/{n}", length, 0, 127).tolist() for n in range(count)]
    greedy = json.loads((HERE / "greedy_prompts.json").read_text())
    return randoms + [p["tokens"] + p["greedy"] for p in greedy["prompts"]]


def runtime_scorer(dtype: torch.dtype) -> Scorer:
    runtime = LlamaRuntime.load(HERE / "ctx", dtype=dtype)
    return lambda seqs: [runtime.logits(s) for s in seqs]


def hf_scorer(attn: str) -> Scorer:
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(HERE / "ctx", dtype=torch.bfloat16,
                                             attn_implementation=attn)

    def score(seqs: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        with torch.no_grad():
            return [model(torch.tensor([list(s)])).logits[0].float() for s in seqs]

    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, default=128)
    parser.add_argument("--length", type=int, default=96)
    args = parser.parse_args()
    margin = json.loads((HERE / "greedy_prompts.json").read_text())["margin"]
    seqs = contexts(args.contexts, args.length)
    reference = runtime_scorer(torch.float32)(seqs)
    stacks: dict[str, Callable[[], Scorer]] = {
        "runtime bf16": lambda: runtime_scorer(torch.bfloat16),
        "transformers bf16 eager": lambda: hf_scorer("eager"),
        "transformers bf16 sdpa": lambda: hf_scorer("sdpa"),
    }
    worst = 0.0
    for name, make in stacks.items():
        try:
            scored = make()(seqs)
        except ImportError:
            print(f"{name:26s} skipped (transformers not installed)")
            continue
        error = max(float((a - b).abs().max()) for a, b in zip(scored, reference, strict=True))
        worst = max(worst, error)
        print(f"{name:26s} max |bf16 - fp32| = {error:.4f}")
    positions = sum(len(s) for s in seqs)
    print(f"{positions} positions x 128 logits; worst {worst:.4f}; "
          f"greedy margin {margin} = {margin / worst:.1f} x worst")


if __name__ == "__main__":
    main()
