"""The rule-2 trace the HTML plots: per round, the e-value; per emitted length, observed vs expected counts."""

from __future__ import annotations

import math
import random

import numpy as np

from sdcp_conformance.oracle.rule2_trace import TRACE_KIND, TracedEProcess, emitted_lengths
from sdcp_conformance.oracle.statistics import RoundLaw, Rule2EProcess


def _law(stop: frozenset[int] = frozenset()) -> RoundLaw:
    """M = 2 over a vocabulary of 4: p and q chosen by hand, x = (1, 2)."""
    p = np.array([[0.1, 0.5, 0.3, 0.1], [0.25, 0.25, 0.25, 0.25], [0.4, 0.3, 0.2, 0.1]])
    q = np.array([[0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.7, 0.1]])
    return RoundLaw(p, q, (1, 2), stop)


def test_emitted_lengths_follow_truncation_at_the_first_stop() -> None:
    plain, stopped = _law(), _law(frozenset({1}))
    # without stops: a accepted tokens then one drawn: a + 1 tokens
    assert sorted(set(emitted_lengths(plain).tolist())) == [1, 2, 3]
    # x[1] = 1 is a stop: accepting it ends the emission after one token, whatever follows
    assert sorted(set(emitted_lengths(stopped).tolist())) == [1]


def test_trace_counts_observations_and_sums_the_exact_law() -> None:
    law = _law()
    traced = TracedEProcess(1e-6, random.Random(1))
    plain = Rule2EProcess(1e-6, random.Random(1))
    rng = np.random.default_rng(3)
    flat = law.exact_cells / law.exact_cells.sum()
    cells = [int(rng.choice(law.cells, p=flat)) for _ in range(200)]
    for cell in cells:
        traced.update(law, cell)
        plain.update(law, cell)
    assert math.isclose(traced.log_e, plain.log_e)  # recording changes nothing in the test
    trace = traced.trace()
    assert trace["kind"] == TRACE_KIND and trace["rounds"] == 200 and len(trace["trajectory"]["log_e"]) == 200
    lengths = emitted_lengths(law)
    # expected per length: 200 times the exact law summed over the cells of that length (computed here)
    alpha1 = min(1.0, 0.5 / 0.7)
    alpha2 = min(1.0, 0.25 / 0.7)
    by_hand = {1: 1 - alpha1, 2: alpha1 * (1 - alpha2), 3: alpha1 * alpha2}
    emitted = trace["emitted"]
    for k, expected, observed, low, high in zip(emitted["tokens"], emitted["expected"], emitted["observed"],
                                                emitted["band_low"], emitted["band_high"], strict=True):
        assert math.isclose(expected, 200 * by_hand[k], rel_tol=1e-6)
        assert observed == sum(int(lengths[cell]) == k for cell in cells)
        assert low <= expected <= high
    assert sum(emitted["observed"]) == 200


def test_an_impossible_outcome_ends_the_trajectory_at_infinity() -> None:
    law = _law()
    traced = TracedEProcess(1e-6, random.Random(1))
    traced.update(law, None, "round 1")
    trace = traced.trace()
    assert trace["rejected"] and trace["impossible"] == 1 and trace["trajectory"]["log_e"] == [None]
