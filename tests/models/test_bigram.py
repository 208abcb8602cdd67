"""The bigram closed form: exact bf16 values, the promised row shapes, and equality with the network."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
import torch

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.bigram import (
    BIGRAM_DRAFT_FAR,
    BIGRAM_DRAFT_NEAR,
    BIGRAM_MODEL_IDS,
    BIGRAM_TARGET,
    EOS_TOKEN,
    VOCAB_SIZE,
    bigram_logits,
    bigram_table,
    row_kind,
)
from sdcp_conformance.models.runtime import LlamaRuntime

TARGET = bigram_table(BIGRAM_TARGET)


def rows_of(kind: str) -> list[int]:
    return [t for t in range(VOCAB_SIZE) if row_kind(t) == kind]


def descending(row: np.ndarray) -> list[float]:
    return sorted(row.tolist(), reverse=True)


def nucleus_size(row: np.ndarray, top_p: float) -> int:
    """Brute force: the fewest most probable tokens whose probability reaches top_p."""
    probs = np.exp(row - row.max())
    probs = np.sort(probs / probs.sum())[::-1]
    return int(np.searchsorted(np.cumsum(probs), top_p) + 1)


@pytest.mark.parametrize("model_id", BIGRAM_MODEL_IDS)
def test_every_entry_is_exact_in_bfloat16(model_id: str) -> None:
    table = bigram_table(model_id)
    assert table.shape == (VOCAB_SIZE, VOCAB_SIZE)
    as_bf16 = torch.tensor(table).to(torch.bfloat16).to(torch.float64).numpy()  # a copy: the table is read-only
    assert np.array_equal(as_bf16, table)
    numerators = table * 16
    assert np.array_equal(numerators, np.round(numerators)) and np.abs(numerators).max() <= 255


def test_tie_rows_have_exactly_two_maxima() -> None:
    for t in rows_of("tie_top2"):
        row = TARGET[t]
        assert np.count_nonzero(row == row.max()) == 2, t


def test_tie_boundary_rows_tie_ranks_five_to_seven() -> None:
    for t in rows_of("tie_boundary"):
        top = descending(TARGET[t])[:8]
        assert len(set(top[:4])) == 4 and top[3] > top[4], t
        assert top[4] == top[5] == top[6] > top[7], t


def test_peaked_and_near_deterministic_rows_have_one_clear_winner() -> None:
    for t in rows_of("peaked"):
        first, second = descending(TARGET[t])[:2]
        assert first - second >= 7, t
    for t in rows_of("near_deterministic"):
        probs = np.exp(TARGET[t] - TARGET[t].max())
        assert probs.max() / probs.sum() > 0.9999, t


def test_stop_likely_rows_favour_the_end_token() -> None:
    for t in rows_of("stop_likely"):
        row = TARGET[t]
        assert int(np.argmax(row)) == EOS_TOKEN and np.count_nonzero(row == row.max()) == 1


def test_near_uniform_rows_are_flat() -> None:
    for t in rows_of("near_uniform"):
        assert TARGET[t].max() - TARGET[t].min() <= 0.5


def test_long_tail_rows_let_top_k_and_top_p_cut_differently() -> None:
    for t in rows_of("long_tail"):
        ladder = descending(TARGET[t])[:13]
        assert ladder[:12] == [4.0 - 0.5 * r for r in range(12)] and ladder[12] < ladder[11]
        sizes = {nucleus_size(TARGET[t], p) for p in (0.5, 0.8, 0.9, 0.95)}
        # top_p keeps between 2 and 11 tokens at these levels: inside the ladder, and varying.
        assert len(sizes) >= 3 and min(sizes) >= 2 and max(sizes) <= 11, (t, sizes)


def test_near_draft_matches_every_fourth_row_and_stays_close_elsewhere() -> None:
    near = bigram_table(BIGRAM_DRAFT_NEAR)
    same = [t for t in range(VOCAB_SIZE) if np.array_equal(near[t], TARGET[t])]
    assert same == list(range(0, VOCAB_SIZE, 4))
    assert np.abs(near - TARGET).max() <= 0.25


def test_far_draft_is_unlike_the_target() -> None:
    far = bigram_table(BIGRAM_DRAFT_FAR)
    agree = sum(int(np.argmax(far[t]) == np.argmax(TARGET[t])) for t in range(VOCAB_SIZE))
    assert agree < VOCAB_SIZE // 8


def test_bigram_logits_is_a_row_of_the_table() -> None:
    assert np.array_equal(bigram_logits(17), TARGET[17])
    assert np.array_equal(bigram_logits(5, BIGRAM_DRAFT_FAR), bigram_table(BIGRAM_DRAFT_FAR)[5])


@pytest.mark.parametrize(("token", "model_id"), [(-1, BIGRAM_TARGET), (VOCAB_SIZE, BIGRAM_TARGET),
                                                 (0, "ctx")])
def test_bigram_logits_refuses_unknown_tokens_and_models(token: int, model_id: str) -> None:
    with pytest.raises(InvalidArgument):
        bigram_logits(token, model_id)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("model_id", BIGRAM_MODEL_IDS)
def test_network_logits_equal_the_closed_form_exactly(
    runtime: Callable[..., LlamaRuntime], model_id: str, dtype: torch.dtype
) -> None:
    rng = random.Random(f"bigram-{model_id}")
    tokens = [rng.randrange(VOCAB_SIZE) for _ in range(3 * VOCAB_SIZE)]
    tokens += list(range(VOCAB_SIZE))  # every row at least once
    rows = runtime(model_id, dtype).logits(tokens).double().numpy()
    assert np.array_equal(rows, bigram_table(model_id)[tokens])
