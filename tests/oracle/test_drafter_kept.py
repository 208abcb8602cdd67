"""The additional tokens that tell kept draft state from the committed prefix (§6.3), checked against the models.

Expectations come from the bigram tables and the float32 runtime directly, not from the oracle's own greedy helpers:
each chosen token must have the property it is chosen for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from sdcp_conformance.models.bigram import bigram_table
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.models.runtime import LlamaRuntime
from sdcp_conformance.oracle.drafter_kept import kept_contexts, telling_bonus, telling_token

PREFIX = (5, 9, 14)
TOLERANCE = 0.25  # D-JUDGE-GREEDY-TOLERANCE for a model without a closed form


def _bigram_row(model: str, context: Sequence[int]) -> np.ndarray:
    return np.asarray(bigram_table(model)[context[-1]])


@pytest.fixture(scope="module")
def ctx_runtime() -> LlamaRuntime:
    return LlamaRuntime.load(mock_model("ctx-draft-near").path)


def _ctx_row(runtime: LlamaRuntime, context: Sequence[int]) -> np.ndarray:
    return np.asarray(runtime.logits(list(context))[-1].double().numpy())


def _tops(row: np.ndarray, tolerance: float = 0.0) -> set[int]:
    return {int(token) for token in np.flatnonzero(row >= row.max() - tolerance)}


def _greedy(row: Callable[[Sequence[int]], np.ndarray], context: Sequence[int], count: int) -> list[int]:
    tokens: list[int] = []
    for _ in range(count):
        tokens.append(int(np.argmax(row([*context, *tokens]))))
    return tokens


def test_with_a_bigram_model_only_the_drafters_own_tokens_can_be_told() -> None:
    model = "bigram-draft-near"
    proposed = _greedy(lambda context: _bigram_row(model, context), PREFIX, 4)
    bonus = telling_bonus(model, PREFIX, proposed, 1)
    assert bonus is not None and bonus not in proposed[1:]
    after_bonus = _tops(_bigram_row(model, [bonus]))
    for own in proposed[1:]:
        assert not after_bonus & _tops(_bigram_row(model, [own]))
    kept = kept_contexts(model, PREFIX, proposed, 1, bonus)
    assert [entry.context for entry in kept] == [(*PREFIX, *proposed[:j]) for j in (2, 3, 4)]
    # A context that keeps the proposal before the committed token ends as the committed prefix does: no token tells.
    assert telling_token(model, PREFIX, [[*PREFIX, *proposed]]) is None


def test_with_the_context_dependent_model_a_kept_draft_before_the_bonus_is_told(ctx_runtime: LlamaRuntime) -> None:
    model = "ctx-draft-near"

    def tops(context: Sequence[int]) -> set[int]:
        return _tops(_ctx_row(ctx_runtime, context), TOLERANCE)

    proposed = _greedy(lambda context: _ctx_row(ctx_runtime, context), PREFIX, 4)
    bonus = telling_bonus(model, PREFIX, proposed, 0)
    assert bonus is not None and bonus not in proposed
    committed = tops([*PREFIX, bonus])
    assert not committed & tops([*PREFIX, *proposed, bonus])
    for j in range(1, 5):
        assert not committed & tops([*PREFIX, *proposed[:j]])
    kept = {entry.context for entry in kept_contexts(model, PREFIX, proposed, 0, bonus)}
    assert (*PREFIX, *proposed, bonus) in kept and (*PREFIX, *proposed) in kept and len(kept) == 8


def test_a_token_committed_without_the_drafter_tells_a_context_still_holding_its_proposal(
        ctx_runtime: LlamaRuntime) -> None:
    model = "ctx-draft-near"
    proposed = _greedy(lambda context: _ctx_row(ctx_runtime, context), PREFIX, 3)
    committed, stale = [*PREFIX, 40, 41], [*PREFIX, *proposed, 40, 41]
    token = telling_token(model, committed, [stale])
    assert token is not None
    assert not (_tops(_ctx_row(ctx_runtime, [*committed, token]), TOLERANCE)
                & _tops(_ctx_row(ctx_runtime, [*stale, token]), TOLERANCE))
