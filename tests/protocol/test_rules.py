"""Tests for the acceptance rules, q checks, truncation and the low-round test (§6.3-§6.5.2)."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import SeededUniforms
from sdcp_conformance.protocol.rules import (
    RuleOutcome,
    check_q_rows,
    is_low_round,
    parse_q_rows,
    residual,
    rule1,
    rule2,
    truncate,
)
from tests.vectors import read_vectors


class ScriptedUniforms:
    """Answers from a fixed table and records every request; unknown requests fail loudly."""

    def __init__(self, values: dict[tuple[int, int], float] | None = None) -> None:
        self.values = values or {}
        self.calls: list[tuple[int, int]] = []

    def uniform(self, i: int, purpose: int) -> float:
        self.calls.append((i, purpose))
        if (i, purpose) not in self.values:
            raise AssertionError(f"unexpected uniform request {(i, purpose)}")
        return self.values[(i, purpose)]


class RecordingUniforms:
    """Wraps a real source and records (i, purpose, value) for each request."""

    def __init__(self, inner: SeededUniforms) -> None:
        self.inner = inner
        self.calls: list[list[Any]] = []

    def uniform(self, i: int, purpose: int) -> float:
        value = self.inner.uniform(i, purpose)
        self.calls.append([i, purpose, value])
        return value


def plain_argmax(row: list[float]) -> int:
    return min(range(len(row)), key=lambda t: (-row[t], t))


# ---------------------------------------------------------------- rule 1


def test_rule1_accepts_all_matching_tokens_and_adds_argmax_of_the_last_row() -> None:
    p = [[0.1, 0.9, 0.0], [0.7, 0.2, 0.1], [0.2, 0.2, 0.6]]
    assert rule1(p, [1, 0]) == RuleOutcome(2, [1, 0, 2])


def test_rule1_stops_at_the_first_mismatch_and_uses_that_row() -> None:
    p = [[0.1, 0.9, 0.0], [0.7, 0.2, 0.1], [0.2, 0.2, 0.6]]
    # x[2] = 2 is not argmax p[2] = 0: a = 1, the additional token is argmax p[2].
    assert rule1(p, [1, 2]) == RuleOutcome(1, [1, 0])
    assert rule1(p, [0, 0]) == RuleOutcome(0, [1])


def test_rule1_ties_accept_only_the_smallest_id() -> None:
    p = [[0.4, 0.4, 0.2], [0.5, 0.5, 0.0]]
    assert rule1(p, [1]) == RuleOutcome(0, [0])
    assert rule1(p, [0]) == RuleOutcome(1, [0, 0])


def test_rule1_never_accepts_a_token_outside_the_vocabulary() -> None:
    assert rule1([[0.0, 1.0], [1.0, 0.0]], [7]) == RuleOutcome(0, [1])


@pytest.mark.parametrize(
    ("p_rows", "tokens"),
    [
        ([[0.5, 0.5]], [0]),  # M rows instead of M + 1
        ([[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]], [0]),
        ([[0.5, 0.5]], []),
        ([0.5, 0.5], [0]),
    ],
)
def test_rule1_refuses_rows_that_do_not_fit_the_proposal(p_rows: list[Any], tokens: list[int]) -> None:
    with pytest.raises(InvalidArgument):
        rule1(p_rows, tokens)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(data=st.data(), vocab=st.integers(1, 5), m=st.integers(1, 5))
def test_rule1_output_is_greedy_decoding_whatever_the_proposal(data: st.DataObject, vocab: int, m: int) -> None:
    # Coarse values make ties common.
    value = st.sampled_from([0.0, 0.25, 0.5])
    p = data.draw(st.lists(st.lists(value, min_size=vocab, max_size=vocab), min_size=m + 1, max_size=m + 1))
    tokens = data.draw(st.lists(st.integers(0, vocab - 1), min_size=m, max_size=m))
    outcome = rule1(p, tokens)
    assert len(outcome.emitted) == outcome.accepted + 1 <= m + 1
    assert outcome.emitted == [plain_argmax(p[k]) for k in range(len(outcome.emitted))]
    assert outcome.emitted[: outcome.accepted] == tokens[: outcome.accepted]
    if outcome.accepted < m:
        assert tokens[outcome.accepted] != plain_argmax(p[outcome.accepted])


# ---------------------------------------------------------------- q checks


GOOD_P = [[0.5, 0.25, 0.25], [0.25, 0.25, 0.5], [0.0, 0.5, 0.5]]
GOOD_Q = [[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]]


@pytest.mark.parametrize(
    ("q_rows", "tokens"),
    [
        ([[0.0, 0.5, 0.5], [0.5, 0.25, 0.25]], [0, 0]),  # q[1](x[1]) = 0
        ([[0.25, 0.5, 0.25], [0.5, 0.0, 0.5]], [0, 1]),  # q[2](x[2]) = 0
        ([[0.25, 0.5, 0.25], [0.5, -0.25, 0.75]], [0, 0]),  # negative elsewhere in the row
        ([[0.25, 0.5, math.nan], [0.5, 0.25, 0.25]], [0, 0]),
        ([[0.25, 0.5, math.inf], [0.5, 0.25, 0.25]], [0, 0]),
        ([[0.25, 0.5, 0.25]], [0, 0]),  # M - 1 rows
        ([[0.25, 0.5, 0.25, 0.0], [0.5, 0.25, 0.25, 0.0]], [0, 0]),  # V + 1 values
        ([0.25, 0.5, 0.25, 0.5, 0.25, 0.25], [0, 0]),  # flat
        ([[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]], [0, 3]),  # token outside the vocabulary
    ],
)
def test_bad_q_is_bad_proposal_before_any_uniform(q_rows: list[Any], tokens: list[int]) -> None:
    source = ScriptedUniforms()
    with pytest.raises(ProtocolError) as caught:
        rule2(GOOD_P, q_rows, tokens, source)
    assert caught.value.problem is ProblemType.BAD_PROPOSAL
    assert caught.value.status == 422
    assert source.calls == []


def test_check_q_rows_keeps_published_values_unnormalized() -> None:
    q = np.array([[0.5, 0.75, 0.25]], dtype=np.float32)
    got = check_q_rows(q, [1], 3)
    assert got.dtype == np.float64
    assert got.tolist() == [[0.5, 0.75, 0.25]]


def test_parse_q_rows_reads_little_endian_binary32() -> None:
    values = [0.1, 0.2, 0.7, 0.3, 0.3, 0.4]
    blob = struct.pack("<6f", *values)
    expected = [list(struct.unpack("<3f", blob[:12])), list(struct.unpack("<3f", blob[12:]))]
    assert parse_q_rows(blob, 2, 3).tolist() == expected


@pytest.mark.parametrize("size", [0, 20, 28])
def test_parse_q_rows_refuses_the_wrong_size(size: int) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_q_rows(bytes(size), 2, 3)
    assert caught.value.problem is ProblemType.BAD_PROPOSAL


# ---------------------------------------------------------------- rule 2


def load_rounds() -> list[dict[str, Any]]:
    return read_vectors("rule2_rounds.json")["rounds"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", load_rounds(), ids=lambda case: case["name"])
def test_rule2_seeded_rounds_match_independent_vectors(case: dict[str, Any]) -> None:
    source = RecordingUniforms(SeededUniforms(case["seed"], bytes.fromhex(case["session"]), case["round"]))
    q = parse_q_rows(bytes.fromhex(case["q_rows_hex"]), len(case["tokens"]), case["vocab_size"])
    assert q.tolist() == case["q_rows"]
    outcome = rule2(case["p_rows"], q, case["tokens"], source)
    expected = case["expected"]
    assert outcome == RuleOutcome(expected["accepted"], expected["emitted"])
    assert source.calls == expected["uniform_calls"]


def test_rule2_all_accepted_draws_from_the_last_row_at_position_m_plus_1() -> None:
    source = ScriptedUniforms({(1, 0): 0.0, (2, 0): 0.0, (3, 1): 0.6})
    # p[3] = [0, 0.5, 0.5]: u = 0.6 lands on token 2.
    assert rule2(GOOD_P, GOOD_Q, [1, 2], source) == RuleOutcome(2, [1, 2, 2])
    assert source.calls == [(1, 0), (2, 0), (3, 1)]


def test_rule2_rejection_draws_from_the_normalized_residual_at_that_position() -> None:
    # Position 1: p = [0.5, 0.25, 0.25], q = [0.25, 0.5, 0.25], x = 1: threshold 0.5.
    # Residual max(0, p - q) = [0.25, 0, 0] puts all mass on token 0.
    source = ScriptedUniforms({(1, 0): 0.5, (1, 1): 0.99})
    assert rule2(GOOD_P, GOOD_Q, [1, 0], source) == RuleOutcome(0, [0])
    assert source.calls == [(1, 0), (1, 1)]


def test_rule2_acceptance_test_is_strict() -> None:
    # p(x) / q(x) = 0.25 / 0.5: r must be strictly below 0.5.
    p, q = [[0.25, 0.75], [1.0, 0.0]], [[0.5, 0.5]]
    at_threshold = ScriptedUniforms({(1, 0): 0.5, (1, 1): 0.0})
    assert rule2(p, q, [0], at_threshold) == RuleOutcome(0, [1])
    below = ScriptedUniforms({(1, 0): math.nextafter(0.5, 0.0), (2, 1): 0.0})
    assert rule2(p, q, [0], below) == RuleOutcome(1, [0, 0])


def test_rule2_ratio_above_one_always_accepts() -> None:
    p, q = [[0.75, 0.25], [0.0, 1.0]], [[0.5, 0.5]]
    source = ScriptedUniforms({(1, 0): math.nextafter(1.0, 0.0), (2, 1): 0.0})
    assert rule2(p, q, [0], source) == RuleOutcome(1, [0, 1])


def test_rule2_never_accepts_a_token_the_target_excludes() -> None:
    p = [[0.0, 1.0], [0.5, 0.5]]
    source = ScriptedUniforms({(1, 0): 0.0, (1, 1): 0.3})
    assert rule2(p, [[0.5, 0.5]], [0], source) == RuleOutcome(0, [1])


def test_rule2_uses_q_exactly_as_published() -> None:
    # q sums to 0.5; renormalizing it would give ratio 0.5 and reject r = 0.75.
    p = [[0.5, 0.5], [1.0, 0.0]]
    source = ScriptedUniforms({(1, 0): 0.75, (2, 1): 0.5})
    assert rule2(p, [[0.25, 0.25]], [1], source) == RuleOutcome(1, [1, 0])


def test_rule2_residual_without_mass_falls_back_to_p() -> None:
    # D-RES-1: q = [0.75, 0.75] covers p everywhere, so max(0, p - q) = 0.
    p = [[0.5, 0.5], [1.0, 0.0]]
    source = ScriptedUniforms({(1, 0): 0.9, (1, 1): 0.6})
    assert rule2(p, [[0.75, 0.75]], [0], source) == RuleOutcome(0, [1])


def test_residual_is_the_positive_part_of_p_minus_q() -> None:
    p = np.array([0.5, 0.25, 0.25, 0.0])
    q = np.array([0.25, 0.5, 0.125, 0.125])
    assert residual(p, q).tolist() == [0.25, 0.0, 0.125, 0.0]
    assert residual(p, np.ones(4)).tolist() == p.tolist()


# ---------------------------------------------------------------- truncate


STOP = [9, 8]


@pytest.mark.parametrize(
    ("emitted", "max_new", "committed", "expected"),
    [
        ([1, 2, 3], 10, 0, ([1, 2, 3], False)),
        ([1, 9, 3, 8], 10, 0, ([1, 9], True)),  # stop inside: keep it, drop the rest
        ([1, 2, 8], 10, 4, ([1, 2, 8], True)),  # stop is the additional token
        ([1, 2, 3, 4], 5, 3, ([1, 2], True)),  # max_new cuts
        ([1, 2, 3], 6, 3, ([1, 2, 3], True)),  # exactly reaches max_new
        ([1, 2, 9], 5, 3, ([1, 2], True)),  # max_new cuts before the stop token
        ([1, 9, 3], 5, 3, ([1, 9], True)),  # both at the same place
        ([9, 2, 3], 5, 1, ([9], True)),  # stop first, well within max_new
        ([1, 2], 3, 3, ([], True)),  # D-TRUNC-1: nothing left to commit
    ],
)
def test_truncate(emitted: list[int], max_new: int, committed: int, expected: tuple[list[int], bool]) -> None:
    assert truncate(emitted, STOP, max_new, committed) == expected


def test_truncate_refuses_committed_beyond_max_new() -> None:
    with pytest.raises(InvalidArgument):
        truncate([1], STOP, 3, 4)


# ---------------------------------------------------------------- low rounds


@pytest.mark.parametrize(
    ("accepted", "proposed", "low_ratio", "low"),
    [
        (0, 4, None, True),
        (1, 4, None, False),
        (0, 4, 0, True),
        (1, 4, 0, False),
        (1, 4, 25, False),  # 100 < 100 is false
        (0, 4, 25, True),
        (1, 4, 26, True),
        (4, 4, 100, False),
        (3, 4, 100, True),
        (2, 3, 67, True),  # 200 < 201
        (2, 3, 66, False),  # 200 < 198 is false
    ],
)
def test_is_low_round(accepted: int, proposed: int, low_ratio: int | None, low: bool) -> None:
    assert is_low_round(accepted, proposed, low_ratio) is low


@pytest.mark.parametrize(("accepted", "proposed", "low_ratio"), [(5, 4, 0), (-1, 4, 0), (0, 0, 0), (1, 4, 101)])
def test_is_low_round_refuses_impossible_rounds(accepted: int, proposed: int, low_ratio: int) -> None:
    with pytest.raises(InvalidArgument):
        is_low_round(accepted, proposed, low_ratio)
