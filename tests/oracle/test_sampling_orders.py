"""p with §4.1's steps in other orders: worked by hand on a small row, and the claims about equal orders."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from sdcp_conformance.models.bigram import VOCAB_SIZE, bigram_logits
from sdcp_conformance.oracle.rule2 import distribution
from sdcp_conformance.oracle.rule2_designs import STEP_ORDER
from sdcp_conformance.oracle.sampling_orders import (
    DRAFT_ORDER,
    TEMPERATURE,
    TOP_K,
    TOP_P,
    WRONG_ORDERS,
    order_variants,
    ordered_distribution,
    support,
)
from sdcp_conformance.oracle.statistics import in_order

LOGITS = [0.0, math.log(4.0), math.log(2.0), math.log(8.0), math.log(1.0) - 1e-9]
"""Untempered probabilities 8:4:2:1:(1-) over ids 3, 1, 2, 0, 4; at temperature 1/2 they are squared: 64:16:4:1:1-."""
PROFILE = {"temperature_milli": 500, "top_k": 3, "top_p_milli": 900}


def _normalised(weights: dict[int, float]) -> list[float]:
    total = sum(weights.values())
    return [weights.get(token, 0.0) / total for token in range(len(LOGITS))]


def test_the_draft_order_keeps_what_the_nucleus_of_the_tempered_top_k_holds() -> None:
    # T = 1/2: 64, 16, 4 (top-3) over 84: 64/84 = 0.762 < 0.9, 80/84 = 0.952 >= 0.9 -> ids 3 and 1, squared
    want = _normalised({3: 64.0, 1: 16.0})
    assert ordered_distribution(LOGITS, PROFILE, DRAFT_ORDER) == pytest.approx(want, rel=1e-12)
    assert distribution(LOGITS, PROFILE, 2) == pytest.approx(want, rel=1e-12)


def test_each_wrong_order_keeps_its_own_tokens() -> None:
    rows = {name: ordered_distribution(LOGITS, PROFILE, order) for name, order in WRONG_ORDERS.items()}
    # temperature, top-p over all five (64, 16, 4, 1, 1- over 86-): 80/86 = 0.93 -> ids 3, 1; top-3 keeps both
    # (the same as the draft's here)
    assert rows["top-p-before-top-k"] == pytest.approx(_normalised({3: 64.0, 1: 16.0}), rel=1e-12)
    # top-3 (8, 4, 2 over 14), top-p untempered: 8/14, 12/14 = 0.857 < 0.9, 14/14 -> ids 3, 1, 2; then squared
    assert rows["temperature-after-top-p"] == pytest.approx(_normalised({3: 64.0, 1: 16.0, 2: 4.0}), rel=1e-12)
    # top-p untempered over all (8, 4, 2, 1, 1- over 16-): 14/16 = 0.875 < 0.9 -> ids 3, 1, 2, 0; top-3; squared
    assert rows["top-p-first"] == pytest.approx(_normalised({3: 64.0, 1: 16.0, 2: 4.0}), rel=1e-12)
    assert set(order_variants(LOGITS, PROFILE)) == {"temperature-after-top-p", "top-p-first"}


def test_a_permutation_is_required() -> None:
    with pytest.raises(ValueError, match="permutation"):
        ordered_distribution(LOGITS, PROFILE, (TEMPERATURE, TOP_K, TOP_K))


@pytest.mark.parametrize("last", range(0, VOCAB_SIZE, 3))
def test_the_orders_left_out_equal_one_that_is_kept(last: int) -> None:
    """Top-k ranks logits, which temperature keeps in order: (top-k, temperature, top-p) is §4.1's p, and
    (top-p, top-k, temperature) is (top-p, temperature, top-k)'s; every order is one of the four p's."""
    logits = bigram_logits(last).tolist()
    right = distribution(logits, STEP_ORDER, 2)
    assert ordered_distribution(logits, STEP_ORDER, (TOP_K, TEMPERATURE, TOP_P)) == pytest.approx(right, abs=1e-12)
    assert (ordered_distribution(logits, STEP_ORDER, (TOP_P, TOP_K, TEMPERATURE))
            == pytest.approx(ordered_distribution(logits, STEP_ORDER, WRONG_ORDERS["top-p-first"]), abs=1e-12))
    known = [right, *(ordered_distribution(logits, STEP_ORDER, order) for order in WRONG_ORDERS.values())]
    for order in itertools.permutations(DRAFT_ORDER):
        row = ordered_distribution(logits, STEP_ORDER, order)
        assert any(np.allclose(row, other, atol=1e-12) for other in known), order


@pytest.mark.parametrize("last", range(1, VOCAB_SIZE, 5))
def test_the_statistical_variants_are_the_orders_rows(last: int) -> None:
    logits = bigram_logits(last).tolist()
    for name, order in WRONG_ORDERS.items():
        assert list(in_order("bigram", [7, last], STEP_ORDER, name)) == ordered_distribution(logits, STEP_ORDER, order)


def test_a_wrong_order_only_ever_keeps_other_tokens() -> None:
    """Every order ends with the softmax of the tempered logits it kept: the same support means the same p."""
    for last in range(VOCAB_SIZE):
        logits = bigram_logits(last).tolist()
        right = distribution(logits, STEP_ORDER, 2)
        for order in WRONG_ORDERS.values():
            row = ordered_distribution(logits, STEP_ORDER, order)
            if support(row) == support(right):
                assert row == pytest.approx(right, abs=1e-12)
