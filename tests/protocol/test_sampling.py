"""Tests for the target distribution and token draws (draft §4.1, P1-SAMP-1, P1-SAMP-2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol import sampling
from sdcp_conformance.protocol.sampling import (
    draw_token,
    greedy_token,
    target_distribution,
)
from tests.vectors import read_vectors

LN2, LN3, LN5 = math.log(2.0), math.log(3.0), math.log(5.0)


def load_vectors() -> dict[str, Any]:
    return read_vectors("sampling.json")  # type: ignore[no-any-return]


def _float(value: float | str) -> float:
    return float(value)  # "inf" / "-inf" strings stand for infinities


@pytest.mark.parametrize("case", load_vectors()["distributions"], ids=lambda case: case["name"])
def test_distribution_matches_independent_vectors(case: dict[str, Any]) -> None:
    logits = [_float(value) for value in case["logits"]]
    got = target_distribution(logits, case["sampling"], case["rule"])
    expected = np.array(case["expected"])
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got == 0.0, expected == 0.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", load_vectors()["draws"], ids=lambda case: case["name"])
def test_draw_matches_independent_vectors(case: dict[str, Any]) -> None:
    assert draw_token(case["weights"], case["u"]) == case["expected"]


def test_greedy_ties_go_to_the_smallest_id() -> None:
    assert greedy_token([1.0, 3.0, 3.0, 0.5]) == 1
    assert greedy_token([7.0, 7.0, 7.0]) == 0
    assert greedy_token([0.0, 0.0, 0.1]) == 2


def test_greedy_rejects_nan_and_empty_rows() -> None:
    with pytest.raises(InvalidArgument):
        greedy_token([0.1, math.nan])
    with pytest.raises(InvalidArgument):
        greedy_token([])


def test_temperature_zero_is_one_hot_on_the_first_maximum() -> None:
    got = target_distribution([2.0, 5.0, 5.0], {"temperature_milli": 0, "top_k": 1}, 2)
    assert got.tolist() == [0.0, 1.0, 0.0]


def test_absent_temperature_is_greedy_under_rule_1_and_one_under_rule_2() -> None:
    logits = [0.0, LN2, LN2 + 1.0]
    assert target_distribution(logits, None, 1).tolist() == [0.0, 0.0, 1.0]
    weights = [1.0, 2.0, 2.0 * math.e]
    expected = [w / sum(weights) for w in weights]
    np.testing.assert_allclose(target_distribution(logits, {}, 2), expected, rtol=1e-14)


def test_temperature_divides_the_logits() -> None:
    # logits / 0.5 = [0, 2 ln 2]: weights 1 and 4.
    got = target_distribution([0.0, LN2], {"temperature_milli": 500}, 2)
    np.testing.assert_allclose(got, [0.2, 0.8], rtol=1e-14)


def test_top_k_boundary_ties_keep_the_smaller_ids() -> None:
    got = target_distribution([1.0, 2.0, 2.0, 2.0, 0.0], {"top_k": 2}, 2)
    np.testing.assert_allclose(got, [0.0, 0.5, 0.5, 0.0, 0.0], rtol=1e-15)


@pytest.mark.parametrize("k", [0, 3, 4, 100])
def test_top_k_zero_or_at_least_vocab_size_is_a_no_op(k: int) -> None:
    logits = [0.0, LN2, LN3]
    got = target_distribution(logits, {"top_k": k}, 2)
    np.testing.assert_allclose(got, [1 / 6, 2 / 6, 3 / 6], rtol=1e-14)


def test_top_p_sorts_ties_by_ascending_id() -> None:
    # p = [0.1, 0.3, 0.3, 0.3]: the sorted order is 1, 2, 3, 0; 0.3 + 0.3 >= 0.5.
    got = target_distribution([0.0, LN3, LN3, LN3], {"top_p_milli": 500}, 2)
    np.testing.assert_allclose(got, [0.0, 0.5, 0.5, 0.0], rtol=1e-15)


def test_top_p_stops_at_a_sum_exactly_equal_to_the_threshold() -> None:
    # p = [0.25] * 4: 0.25 + 0.25 = 0.5 exactly, and "sum >= top_p" stops there.
    got = target_distribution([0.0, 0.0, 0.0, 0.0], {"top_p_milli": 500}, 2)
    assert got.tolist() == [0.5, 0.5, 0.0, 0.0]


def test_top_p_zero_keeps_only_the_most_probable_token() -> None:
    got = target_distribution([0.0, LN3, LN3, LN3], {"top_p_milli": 0}, 2)
    assert got.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_top_p_1000_is_a_no_op() -> None:
    got = target_distribution([0.0, LN3], {"top_p_milli": 1000}, 2)
    np.testing.assert_allclose(got, [0.25, 0.75], rtol=1e-14)


def test_top_k_runs_before_top_p_on_the_renormalized_distribution() -> None:
    # p = [0.5, 0.3, 0.2]. top-k 2 then renormalize: [0.625, 0.375, 0], and
    # 0.625 >= 0.6 keeps one token. Top-p first (or top-p on the
    # unrenormalized 0.5, 0.3) would keep two tokens instead.
    got = target_distribution([LN5, LN3, LN2], {"top_k": 2, "top_p_milli": 600}, 2)
    assert got.tolist() == [1.0, 0.0, 0.0]


def test_masked_logits_get_probability_zero() -> None:
    got = target_distribution([-math.inf, 0.0, LN3, -math.inf], None, 2)
    np.testing.assert_allclose(got, [0.0, 0.25, 0.75, 0.0], rtol=1e-14)
    assert got[0] == 0.0 and got[3] == 0.0


@pytest.mark.parametrize(
    ("logits", "sampling", "rule"),
    [
        ([0.0, math.nan], None, 2),
        ([0.0, math.inf], None, 2),
        ([-math.inf, -math.inf], None, 2),
        ([], None, 2),
        ([0.0, 1.0], None, 3),
        ([0.0, 1.0], {"top_k": -1}, 2),
        ([0.0, 1.0], {"top_p_milli": 1001}, 2),
        ([0.0, 1.0], {"temperature_milli": -5}, 2),
    ],
)
def test_invalid_inputs_are_refused(logits: list[float], sampling: dict[str, int] | None, rule: int) -> None:
    with pytest.raises(InvalidArgument):
        target_distribution(logits, sampling, rule)


def reference_nucleus(probs: list[float], top_p: float) -> list[float]:
    """Top-p by a full Python sort, for comparison with the selection-based search."""
    order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
    running, kept = 0.0, []
    for i in order:
        kept.append(i)
        running += probs[i]
        if running >= top_p:
            break
    return [probs[i] / running if i in set(kept) else 0.0 for i in range(len(probs))]


@pytest.mark.parametrize("first_guess", [1, 7, 1024])
@pytest.mark.parametrize("top_p_milli", [0, 300, 900, 999])
def test_top_p_search_grows_to_the_same_prefix_as_a_full_sort(
    monkeypatch: pytest.MonkeyPatch, first_guess: int, top_p_milli: int
) -> None:
    rng = np.random.default_rng(first_guess + top_p_milli)
    logits = np.round(rng.normal(scale=2.0, size=3000), 1)  # one decimal: many ties
    probs = target_distribution(logits, {"temperature_milli": 1000}, 2)
    monkeypatch.setattr(sampling, "NUCLEUS_FIRST_GUESS", first_guess)
    got = target_distribution(logits, {"temperature_milli": 1000, "top_p_milli": top_p_milli}, 2)
    assert got.tolist() == reference_nucleus(probs.tolist(), top_p_milli / 1000)


def test_a_large_vocabulary_row_is_handled() -> None:
    rng = np.random.default_rng(7)
    logits = rng.normal(size=150_000)
    got = target_distribution(logits, {"temperature_milli": 800, "top_p_milli": 950}, 2)
    assert got.shape == (150_000,)
    assert math.isclose(float(got.sum()), 1.0, rel_tol=1e-12)
    assert got.argmax() == logits.argmax()


# Half-integer logits: equal logits tie exactly, unequal ones are far apart, so
# ulp-level differences between numpy's and math's exp cannot reorder tokens.
logit_rows = st.lists(st.integers(min_value=-12, max_value=12).map(lambda n: n / 2), min_size=1, max_size=12)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    logits=logit_rows,
    temperature=st.sampled_from([100, 700, 1000, 2500]),
    top_k=st.integers(min_value=0, max_value=14),
    top_p=st.integers(min_value=0, max_value=1000),
)
def test_support_is_top_k_then_the_shortest_top_p_prefix(
    logits: list[float], temperature: int, top_k: int, top_p: int
) -> None:
    sampling = {"temperature_milli": temperature, "top_k": top_k, "top_p_milli": top_p}
    got = target_distribution(logits, sampling, 2)
    assert math.isclose(float(got.sum()), 1.0, rel_tol=1e-12)
    # An independent reading: top-k on the scaled logits, then top-p on the
    # renormalized survivors, both ordered by value descending, ties by id.
    scaled = [value / (temperature / 1000) for value in logits]
    order = sorted(range(len(logits)), key=lambda i: (-scaled[i], i))
    survivors = order[:top_k] if 0 < top_k < len(logits) else order
    weights = [math.exp(scaled[i] - scaled[order[0]]) for i in survivors]
    probs = [w / math.fsum(weights) for w in weights]
    running = np.cumsum(probs).tolist()
    threshold = top_p / 1000
    assume(all(abs(s - threshold) > 1e-9 for s in running))
    length = next((n + 1 for n, s in enumerate(running) if s >= threshold), len(survivors))
    if top_p == 1000:
        length = len(survivors)
    expected = {i for i, p in zip(survivors[:length], probs, strict=False) if p > 0.0}
    assert set(np.flatnonzero(got).tolist()) == expected
    kept = np.array(survivors[:length])
    np.testing.assert_allclose(got[kept], np.array(probs[:length]) / sum(probs[:length]), rtol=1e-12)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    weights=st.lists(
        st.one_of(st.just(0.0), st.floats(min_value=1e-6, max_value=10.0)), min_size=1, max_size=20
    ).filter(any),
    u=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_draw_agrees_with_a_plain_loop(weights: list[float], u: float) -> None:
    sums, running = [], 0.0
    for weight in weights:
        running += weight
        sums.append(running)
    expected = next(k for k, s in enumerate(sums) if u < s / sums[-1])
    assert draw_token(weights, u) == expected
    assert weights[expected] > 0.0


def test_draw_on_a_boundary_moves_to_the_next_token() -> None:
    # Normalized cumulative sums are 0.25, 0.5, 1.0; "u < ..." is strict.
    assert draw_token([1.0, 1.0, 2.0], 0.2499) == 0
    assert draw_token([1.0, 1.0, 2.0], 0.25) == 1
    assert draw_token([1.0, 1.0, 2.0], 0.5) == 2
    assert draw_token([0.0, 5.0], 0.0) == 1


@pytest.mark.parametrize("u", [-0.1, 1.0, 1.5, math.nan])
def test_draw_refuses_a_uniform_outside_the_unit_interval(u: float) -> None:
    with pytest.raises(InvalidArgument):
        draw_token([1.0, 2.0], u)


@pytest.mark.parametrize("weights", [[0.0, 0.0], [1.0, -0.5], [math.nan, 1.0], [math.inf], []])
def test_draw_refuses_weights_without_a_distribution(weights: list[float]) -> None:
    with pytest.raises(InvalidArgument):
        draw_token(weights, 0.5)
