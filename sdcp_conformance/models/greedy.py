"""Greedy decoding with the runtime, recording each step's top-1 minus top-2 logit margin."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from sdcp_conformance.models.runtime import LlamaRuntime


@dataclass(frozen=True)
class GreedyRun:
    """The greedy continuation of one prompt and the logit margin behind each chosen token."""

    prompt: tuple[int, ...]
    tokens: tuple[int, ...]
    margins: tuple[float, ...]

    @property
    def min_margin(self) -> float:
        return min(self.margins)


def argmax_and_margin(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: the argmax (ties to the smallest id, draft §6.4 rule 1) and top1 - top2."""
    top = rows.max(dim=-1, keepdim=True).values
    ids = torch.arange(rows.shape[-1], device=rows.device)
    # The smallest id among the maxima: replace non-maxima by V and take the minimum.
    choice = torch.where(rows == top, ids, rows.shape[-1]).min(dim=-1).values
    second = rows.topk(2, dim=-1).values[..., 1]
    return choice, top[..., 0] - second


def greedy_runs(
    runtime: LlamaRuntime,
    prompts: Sequence[Sequence[int]],
    steps: int,
    *,
    stop_below: float | None = None,
) -> list[GreedyRun]:
    """Greedy-decode ``steps`` tokens after every prompt, all live sessions batched in each pass.

    With ``stop_below``, a session stops at the first step whose margin is
    below it (that step's token is still recorded), which saves the work of
    searching for prompts that keep a margin.
    """
    caches = [runtime.new_cache() for _ in prompts]
    rows = [r[-1] for r in runtime.score_batch(caches, prompts)]
    tokens: list[list[int]] = [[] for _ in prompts]
    margins: list[list[float]] = [[] for _ in prompts]
    live = list(range(len(prompts)))
    for step in range(steps):
        choice, margin = argmax_and_margin(torch.stack(rows))
        for b, token, gap in zip(live, choice.tolist(), margin.tolist(), strict=True):
            tokens[b].append(int(token))
            margins[b].append(float(gap))
        live = [b for b in live if stop_below is None or margins[b][-1] >= stop_below]
        if step + 1 == steps or not live:
            break
        rows = [r[-1] for r in runtime.score_batch([caches[b] for b in live],
                                                   [[tokens[b][-1]] for b in live])]
    return [GreedyRun(tuple(p), tuple(t), tuple(m))
            for p, t, m in zip(prompts, tokens, margins, strict=True)]


__all__ = ["GreedyRun", "argmax_and_margin", "greedy_runs"]
