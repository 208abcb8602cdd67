"""Drafting over a logits function (§5.2, §6.2, P1-DRF-4, D-DRF-9).

Expected rows are computed here with a hand-written softmax; expected tokens
by replaying the same numpy stream through an explicit inverse-CDF loop.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

import numpy as np
import pytest

from sdcp_conformance.reference.drafter.drafting import LogitsDraftModel, encode_q_rows

V = 6


def logits(context: Sequence[int]) -> np.ndarray:
    """A context-dependent row with distinct values."""
    base = sum(context) % V
    return np.array([((token - base) % V) * 0.7 - 1.0 for token in range(V)])


def model(fn: object = logits) -> LogitsDraftModel:
    return LogitsDraftModel(fn, vocab_size=V, model_sha256=bytes(32), tokenizer_sha256=bytes(32))  # type: ignore[arg-type]


def softmax32(row: Sequence[float], temperature: float = 1.0) -> np.ndarray:
    peak = max(row)
    weights = [math.exp((value - peak) / temperature) for value in row]
    total = sum(weights)
    return np.array([w / total for w in weights], dtype=np.float32)


def inverse_cdf(row: np.ndarray, u: float) -> int:
    running, cumulative = 0.0, []
    for value in row.astype(np.float64):
        running += value
        cumulative.append(running)
    total = cumulative[-1]
    return next(k for k, c in enumerate(cumulative) if u < c / total)


def test_rule1_proposes_the_draft_models_greedy_tokens_without_rows() -> None:
    tokens, rows = model().draft(b"s", (1, 2), 3, None, 1, np.random.default_rng(0))
    expected, ctx = [], [1, 2]
    for _ in range(3):
        row = logits(ctx)
        expected.append(int(max(range(V), key=lambda t: (row[t], -t))))
        ctx.append(expected[-1])
    assert tokens == tuple(expected) and rows is None


def test_rule1_breaks_ties_to_the_smaller_id() -> None:
    flat = model(lambda ctx: np.array([0.0, 2.0, 2.0, 1.0, 0.0, 0.0]))
    assert flat.draft(b"s", (0,), 2, None, 1, np.random.default_rng(0))[0] == (1, 1)


def test_rule2_publishes_the_rows_it_samples_from() -> None:
    sampling = {"temperature_milli": 800}
    tokens, rows = model().draft(b"s", (3,), 4, sampling, 2, np.random.default_rng(42))
    assert rows is not None and rows.dtype == np.float32 and rows.shape == (4, V)
    replay = np.random.default_rng(42)
    ctx = [3]
    for position, token in enumerate(tokens):
        expected_row = softmax32(list(logits(ctx)), 0.8)
        np.testing.assert_allclose(rows[position], expected_row, rtol=2e-7, atol=0)
        assert token == inverse_cdf(rows[position], float(replay.random()))
        assert rows[position][token] > 0
        ctx.append(token)


def test_rule2_absent_temperature_is_one_and_top_k_zeroes_the_rest() -> None:
    _tokens, rows = model().draft(b"s", (0,), 1, None, 2, np.random.default_rng(1))
    assert rows is not None
    np.testing.assert_allclose(rows[0], softmax32(list(logits([0]))), rtol=2e-7)
    _, rows = model().draft(b"s", (0,), 1, {"top_k": 2}, 2, np.random.default_rng(1))
    assert rows is not None
    kept = np.argsort(-logits([0]), kind="stable")[:2]
    assert set(np.flatnonzero(rows[0])) == set(kept.tolist())


def test_rule2_tokens_follow_the_published_row_statistically() -> None:
    fixed = np.log(np.array([0.05, 0.3, 0.0, 0.15, 0.4, 0.1]) + 1e-300)
    draft = model(lambda ctx: fixed)
    rng = np.random.default_rng(2024)
    counts = np.zeros(V)
    rows = None
    for _ in range(400):
        tokens, rows = draft.draft(b"s", (1,), 8, None, 2, rng)
        for token in tokens:
            counts[token] += 1
    assert rows is not None
    q = rows[0].astype(np.float64)
    n = counts.sum()
    assert counts[2] == 0  # q(x) = 0 is never proposed
    # Each frequency within 5 standard deviations of the published probability.
    for token in range(V):
        sigma = math.sqrt(max(q[token] * (1 - q[token]), 1e-12) * n)
        assert abs(counts[token] - q[token] * n) <= 5 * sigma + 1e-9, (token, counts[token], q[token] * n)


def test_q_rows_are_little_endian_binary32_in_position_order() -> None:
    rows = np.array([[0.25, 0.75], [1.0, 0.0]], dtype=np.float32)
    assert encode_q_rows(rows) == struct.pack("<4f", 0.25, 0.75, 1.0, 0.0)


def test_bad_logits_shape_and_m_are_refused() -> None:
    with pytest.raises(ValueError):
        model(lambda ctx: np.zeros(V + 1)).draft(b"s", (0,), 1, None, 1, np.random.default_rng(0))
    with pytest.raises(ValueError):
        model().draft(b"s", (0,), 0, None, 1, np.random.default_rng(0))
