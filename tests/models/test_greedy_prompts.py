"""The ctx greedy prompts: recorded continuations, their margin, and its bf16 safety factor."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch

from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.greedy import argmax_and_margin, greedy_runs
from sdcp_conformance.models.registry import GreedyPrompts, Manifest
from sdcp_conformance.models.runtime import LlamaRuntime

SAFETY_FACTOR = 4
"""D-MODEL-3: the margin must exceed the largest bf16 logit error seen by this factor."""


@pytest.fixture(scope="module")
def greedy(manifest: Manifest) -> GreedyPrompts:
    return manifest.greedy_prompts()


def test_argmax_breaks_ties_to_the_smallest_id() -> None:
    rows = torch.tensor([[0.0, 2.0, 1.0, 2.0], [3.0, 3.0, 3.0, 0.0], [1.0, 0.0, 0.5, 0.25]])
    choice, margin = argmax_and_margin(rows)
    assert choice.tolist() == [1, 0, 0]
    assert margin.tolist() == [0.0, 0.0, 0.5]


def test_there_are_enough_prompts_of_the_promised_length(greedy: GreedyPrompts) -> None:
    assert greedy.model_id == "ctx" and len(greedy.prompts) == 16 and greedy.steps == 64
    assert all(len(p.greedy) == greedy.steps for p in greedy.prompts)
    assert len({p.tokens for p in greedy.prompts}) == len(greedy.prompts)


def test_prompt_texts_encode_to_the_prompt_tokens(manifest: Manifest,
                                                  greedy: GreedyPrompts) -> None:
    tokenizer = Checkpoint.open(manifest.model("ctx").path).tokenizer()
    for prompt in greedy.prompts:
        assert tuple(tokenizer.encode(prompt.text).ids) == prompt.tokens


def test_recorded_continuations_are_float32_greedy_with_the_margin(
    runtime: Callable[..., LlamaRuntime], greedy: GreedyPrompts
) -> None:
    ctx = runtime("ctx")
    runs = greedy_runs(ctx, [p.tokens for p in greedy.prompts], greedy.steps)
    for run, prompt in zip(runs, greedy.prompts, strict=True):
        assert run.tokens == prompt.greedy
        assert run.min_margin >= greedy.margin
    # Recomputed without the cache, one full pass per prompt: same tokens.
    for prompt in greedy.prompts[:4]:
        full = ctx.logits(prompt.tokens + prompt.greedy[:-1])[len(prompt.tokens) - 1 :]
        assert tuple(full.argmax(dim=-1).tolist()) == prompt.greedy


def test_greedy_output_depends_on_context_not_only_on_the_last_token(
    greedy: GreedyPrompts,
) -> None:
    """Some step's token differs from what the same previous token led to elsewhere."""
    follows: dict[int, set[int]] = {}
    for prompt in greedy.prompts:
        sequence = prompt.tokens[-1:] + prompt.greedy
        for before, after in itertools.pairwise(sequence):
            follows.setdefault(before, set()).add(after)
    assert any(len(after) > 1 for after in follows.values())


def test_margin_exceeds_the_bf16_error_on_these_trajectories(
    runtime: Callable[..., LlamaRuntime], greedy: GreedyPrompts
) -> None:
    fp32, bf16 = runtime("ctx"), runtime("ctx", torch.bfloat16)
    worst = 0.0
    for prompt in greedy.prompts:
        sequence = prompt.tokens + prompt.greedy
        worst = max(worst, float((fp32.logits(sequence) - bf16.logits(sequence)).abs().max()))
    assert 0 < worst * SAFETY_FACTOR <= greedy.margin
