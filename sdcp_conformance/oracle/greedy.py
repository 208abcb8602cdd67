"""What a correct verifier's target model (or a correct drafter's draft model) says, computed by the harness itself.

``bigram`` models: the closed-form table (exact). Other mock models: the
manifest's recorded greedy continuations where the context follows one
(``greedy_prompts.json``: what the torch runtime computes in float32, kept only
with a bf16-safe margin); else the model's forward pass in numpy
(:mod:`sdcp_conformance.oracle.llama_numpy`, float64 from the stored weights),
so that certifying a target or a drafter needs no torch. The oracle tests
cross-check it against the torch runtime in float32, which the mock-model tests
cross-check against Hugging Face transformers. Nothing here runs the reference
verifier or drafter.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.models.registry import GreedyPrompts, load_manifest, mock_model
from sdcp_conformance.oracle.llama_numpy import load_model


@cache
def _recorded(root: Path) -> GreedyPrompts:
    return load_manifest(root).greedy_prompts()


def recorded_greedy(model_id: str, context: Sequence[int], count: int) -> list[int] | None:
    """The manifest's greedy continuation of ``context``: when it is one of the recorded prompts followed by a
    prefix of that prompt's continuation, the next ``count`` tokens of it (None where the record ends first)."""
    recorded = _recorded(load_manifest().root)
    if recorded.model_id != model_id:
        return None
    for prompt in recorded.prompts:
        size = len(prompt.tokens)
        done = tuple(context[size:])
        if (tuple(context[:size]) == prompt.tokens and prompt.greedy[:len(done)] == done
                and len(done) + count <= len(prompt.greedy)):
            return list(prompt.greedy[len(done):len(done) + count])
    return None


def next_logits(model_id: str, context: Sequence[int]) -> npt.NDArray[np.float64]:
    """The target's logits after ``context`` (prompt + committed output)."""
    if mock_model(model_id).closed_form == "bigram":
        return np.asarray(bigram_logits(context[-1], model_id), dtype=np.float64)
    return _model_logits(model_id, tuple(context))


@lru_cache(maxsize=4096)
def _model_logits(model_id: str, context: tuple[int, ...]) -> npt.NDArray[np.float64]:
    row: npt.NDArray[np.float64] = load_model(mock_model(model_id).path).logits(list(context))[-1]
    row.setflags(write=False)  # shared by every caller asking for this context
    return row


def next_logits_each(model_id: str, context: Sequence[int], candidates: Sequence[int]) -> npt.NDArray[np.float64]:
    """``[len(candidates), V]``: the logits after ``context + [t]`` for each candidate ``t``, in one pass."""
    if mock_model(model_id).closed_form == "bigram":
        return np.stack([np.asarray(bigram_logits(token, model_id), dtype=np.float64) for token in candidates])
    contexts = [[*context, token] for token in candidates]
    rows: npt.NDArray[np.float64] = load_model(mock_model(model_id).path).batch_logits(contexts)[:, -1, :]
    return rows


def argmax_smallest(row: npt.NDArray[np.float64]) -> int:
    """§6.4 rule 1: "ties are broken in favor of the smallest token identifier"."""
    best = float(np.max(row))
    return int(np.flatnonzero(row == best)[0])


def greedy_continuation(model_id: str, context: Sequence[int], count: int) -> list[int]:
    """Greedy decoding of ``count`` tokens after ``context``."""
    if mock_model(model_id).closed_form is None:
        recorded = recorded_greedy(model_id, context, count)
        if recorded is not None:
            return recorded
    tokens: list[int] = []
    for _ in range(count):
        tokens.append(argmax_smallest(next_logits(model_id, [*context, *tokens])))
    return tokens


RUNTIME_LOGIT_TOLERANCE = 0.25
"""D-JUDGE-GREEDY-TOLERANCE: how far below the largest logit a token of a model without a closed form may be and
still count as greedy. Another runtime computes other logits: ``mock_models/README.md`` measured at most 0.102
between bfloat16 and float32 for one logit, so two logits that swap places differ by at most about 0.2 there. The
closed-form bigram models are exact in either precision: only exact ties count there."""


def greedy_tolerance(model_id: str) -> float:
    return 0.0 if mock_model(model_id).closed_form == "bigram" else RUNTIME_LOGIT_TOLERANCE


def top_tokens_each(model_id: str, context: Sequence[int], candidates: Sequence[int]) -> list[set[int]]:
    """:func:`top_tokens` after ``context + [t]`` for each candidate ``t``, computed together."""
    rows = next_logits_each(model_id, context, candidates)
    floor = rows.max(axis=1, keepdims=True) - greedy_tolerance(model_id)
    return [{int(token) for token in np.flatnonzero(row >= low)} for row, low in zip(rows, floor[:, 0], strict=True)]


def top_tokens(model_id: str, context: Sequence[int]) -> set[int]:
    """The tokens a greedy drafter may draft after ``context``: the largest logit's, under any tie-break, and
    those within :func:`greedy_tolerance` of it."""
    row = next_logits(model_id, context)
    return {int(token) for token in np.flatnonzero(row >= row.max() - greedy_tolerance(model_id))}


def greedy_any_tie(model_id: str, context: Sequence[int], tokens: Sequence[int]) -> bool:
    """Whether each of ``tokens`` is one of :func:`top_tokens` after ``context`` and the tokens before it."""
    return all(token in top_tokens(model_id, [*context, *tokens[:i]]) for i, token in enumerate(tokens))


__all__ = ["RUNTIME_LOGIT_TOLERANCE", "argmax_smallest", "greedy_any_tie", "greedy_continuation", "greedy_tolerance",
           "next_logits", "next_logits_each", "recorded_greedy", "top_tokens", "top_tokens_each"]
