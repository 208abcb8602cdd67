"""Tests for the choice of M (draft §6.2) and the acceptance estimate (P1-DRF-8)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.speculation import choose_m, expected_tokens, update_alpha


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 0.9, 0.999, 1.0])
@pytest.mark.parametrize("m", [0, 1, 2, 7, 64])
def test_expected_tokens_is_the_geometric_sum(alpha: float, m: int) -> None:
    # 1 + alpha + ... + alpha^M, summed term by term.
    assert math.isclose(expected_tokens(alpha, m), sum(alpha**k for k in range(m + 1)), rel_tol=1e-12)


def test_expected_tokens_at_alpha_one_is_m_plus_one() -> None:
    assert expected_tokens(1.0, 5) == 6.0


def test_perfect_drafter_with_cheap_drafting_uses_the_whole_limit() -> None:
    assert choose_m(1.0, 0.001, 1.0, 8) == 8
    assert choose_m(1.0, 0.0, 1.0, 64) == 64


def test_a_loaded_drafter_proposes_fewer_tokens() -> None:
    # alpha = 0.8, t_v = 1: rates for t_d = 0.5 are 1.2, 1.22, 1.1808 for M = 1, 2, 3.
    assert choose_m(0.8, 0.5, 1.0, 8) == 2
    assert choose_m(0.8, 0.01, 1.0, 8) == 8


def test_a_useless_drafter_proposes_one_token() -> None:
    assert choose_m(0.0, 0.1, 1.0, 16) == 1
    # Every rate is equal when t_d = 0 and alpha = 0: D-SPEC-1 ties go to the smaller M.
    assert choose_m(0.0, 0.0, 1.0, 16) == 1


def test_free_verification_favours_short_proposals() -> None:
    assert choose_m(1.0, 1.0, 0.0, 10) == 1  # (M + 1) / M decreases


def brute_force(alpha: Fraction, t_d: Fraction, t_v: Fraction, limit: int) -> tuple[int, Fraction]:
    """The best M (smallest among exact ties) and its margin over the next-best distinct rate."""
    rates = {}
    for m in range(1, limit + 1):
        gain = sum((alpha**k for k in range(m + 1)), Fraction(0))
        rates[m] = gain / (m * t_d + t_v)
    best = max(rates.values())
    others = [rate for rate in rates.values() if rate < best]
    margin = best - max(others) if others else Fraction(1)
    return min(m for m, rate in rates.items() if rate == best), margin


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    alpha=st.integers(0, 100),
    t_d=st.integers(0, 50),
    t_v=st.integers(1, 200),
    limit=st.integers(1, 64),
)
def test_choice_agrees_with_exact_brute_force(alpha: int, t_d: int, t_v: int, limit: int) -> None:
    expected, margin = brute_force(Fraction(alpha, 100), Fraction(t_d), Fraction(t_v), limit)
    # Distinct rates closer than rounding error may be ordered either way in binary64.
    assume(margin > Fraction(1, 10**9))
    assert choose_m(alpha / 100, float(t_d), float(t_v), limit) == expected


@pytest.mark.parametrize(
    ("alpha", "t_d", "t_v", "limit"),
    [
        (-0.1, 1.0, 1.0, 4),
        (1.1, 1.0, 1.0, 4),
        (math.nan, 1.0, 1.0, 4),
        (0.5, -1.0, 1.0, 4),
        (0.5, 1.0, -1.0, 4),
        (0.5, 0.0, 0.0, 4),
        (0.5, math.inf, 1.0, 4),
        (0.5, 1.0, 1.0, 0),
    ],
)
def test_choose_m_refuses_invalid_inputs(alpha: float, t_d: float, t_v: float, limit: int) -> None:
    with pytest.raises(InvalidArgument):
        choose_m(alpha, t_d, t_v, limit)


def test_expected_tokens_refuses_negative_m() -> None:
    with pytest.raises(InvalidArgument):
        expected_tokens(0.5, -1)


def test_update_alpha_counts_accepted_positions_and_the_first_rejection() -> None:
    # weight 0.5: observations 1, 1, 0 move 0.5 to 0.75, 0.875, 0.4375.
    assert update_alpha(0.5, 2, 4, weight=0.5) == 0.4375
    # All accepted: three observations of 1, no rejection.
    assert update_alpha(0.5, 3, 3, weight=0.5) == 0.9375
    # a = 0: only the rejected first position is observed.
    assert update_alpha(0.5, 0, 5, weight=0.5) == 0.25


@pytest.mark.parametrize(("accepted", "proposed", "weight"), [(3, 2, 0.5), (0, 0, 0.5), (1, 2, 0.0)])
def test_update_alpha_refuses_impossible_rounds(accepted: int, proposed: int, weight: float) -> None:
    with pytest.raises(InvalidArgument):
        update_alpha(0.5, accepted, proposed, weight=weight)
