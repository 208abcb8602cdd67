"""What a correct verifier's target model says, computed by the harness itself.

``bigram`` models: the closed-form table (exact). Other mock models: the
torch runtime in float32, which the mock-model tests cross-check against
Hugging Face transformers. Nothing here runs the reference verifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.models.registry import mock_model

if TYPE_CHECKING:
    from sdcp_conformance.models.runtime import LlamaRuntime


@cache
def _runtime(model_id: str) -> LlamaRuntime:
    from sdcp_conformance.models.runtime import LlamaRuntime  # torch: only when a non-closed-form model is asked

    return LlamaRuntime.load(mock_model(model_id).path)


def next_logits(model_id: str, context: Sequence[int]) -> npt.NDArray[np.float64]:
    """The target's logits after ``context`` (prompt + committed output)."""
    if mock_model(model_id).closed_form == "bigram":
        return np.asarray(bigram_logits(context[-1], model_id), dtype=np.float64)
    rows = _runtime(model_id).logits(list(context))
    return np.asarray(rows[-1].double().numpy(), dtype=np.float64)


def argmax_smallest(row: npt.NDArray[np.float64]) -> int:
    """§6.4 rule 1: "ties are broken in favor of the smallest token identifier"."""
    best = float(np.max(row))
    return int(np.flatnonzero(row == best)[0])


def greedy_continuation(model_id: str, context: Sequence[int], count: int) -> list[int]:
    """Greedy decoding of ``count`` tokens after ``context``."""
    tokens: list[int] = []
    for _ in range(count):
        tokens.append(argmax_smallest(next_logits(model_id, [*context, *tokens])))
    return tokens


__all__ = ["argmax_smallest", "greedy_continuation", "next_logits"]
