"""VER-6.4-RULE2-012's choices: after each chosen context every wrong order of §4.1's steps keeps other tokens,
and a telling round's acceptance decision differs under each of them whatever the seed.

The kept sets are recomputed here from the model's logits with numpy and the closed form of each order (every
order keeps a prefix of the tokens by logit, descending, ties by id), apart from
:mod:`sdcp_conformance.oracle.sampling_orders`.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.rule2_designs import STEP_ORDER
from sdcp_conformance.oracle.statistics import DEFAULT_RHO
from sdcp_conformance.suites.verifier.step_order import ORDER_CONTEXTS, telling_row, telling_seed

T, K, TOP_P = STEP_ORDER["temperature_milli"] / 1000, STEP_ORDER["top_k"], STEP_ORDER["top_p_milli"] / 1000
MARGIN = 4 * math.expm1(DEFAULT_RHO)
"""A cut this close to the threshold could move in an engine within the statistical tolerance."""


def _ranked(last: int) -> np.ndarray:
    logits = bigram_logits(last)
    return np.lexsort((np.arange(logits.size), -logits))


def _nucleus(probs: np.ndarray, threshold: float) -> int:
    """How many of ``probs`` (sorted descending, summing to one) the shortest prefix reaching the threshold has."""
    return int(np.argmax(np.cumsum(probs) >= threshold)) + 1


def _softmax(values: np.ndarray) -> np.ndarray:
    weights = np.exp(values - values.max())
    return weights / weights.sum()


def _kept(last: int) -> dict[str, int]:
    """How many tokens (a prefix of the ranking) each order keeps after ``last``."""
    sorted_logits = bigram_logits(last)[_ranked(last)]
    tempered, plain = _softmax(sorted_logits / T), _softmax(sorted_logits)
    return {
        "draft": _nucleus(_softmax(sorted_logits[:K] / T), TOP_P),        # temperature, top-k, top-p
        "top-p-before-top-k": min(K, _nucleus(tempered, TOP_P)),         # temperature, top-p, top-k
        "temperature-after-top-p": _nucleus(_softmax(sorted_logits[:K]), TOP_P),  # top-k, top-p, temperature
        "top-p-first": min(K, _nucleus(plain, TOP_P)),                   # top-p, then top-k and temperature
    }


@pytest.mark.parametrize("last", ORDER_CONTEXTS)
def test_every_wrong_order_keeps_more_tokens_and_each_its_own_number(last: int) -> None:
    kept = _kept(last)
    wrong = [kept[name] for name in kept if name != "draft"]
    assert all(count > kept["draft"] for count in wrong), kept
    assert len(set(wrong)) == len(wrong), kept


@pytest.mark.parametrize("last", ORDER_CONTEXTS)
def test_the_draft_orders_cut_is_clear_of_the_tolerance_and_of_ties(last: int) -> None:
    sorted_logits = bigram_logits(last)[_ranked(last)]
    probs = _softmax(sorted_logits[:K] / T)
    running = np.cumsum(probs)
    n = _kept(last)["draft"]
    assert running[n - 1] - TOP_P > MARGIN and (n == 1 or TOP_P - running[n - 2] > MARGIN)
    assert sorted_logits[n - 1] != sorted_logits[n] and sorted_logits[K - 1] != sorted_logits[K]


@pytest.mark.parametrize("last", ORDER_CONTEXTS)
def test_a_telling_round_is_decided_differently_by_every_wrong_order(last: int) -> None:
    """q lies on the tokens every wrong order keeps and the draft's p excludes; with r below the margin each such
    token is rejected under §4.1's p and accepted under every other order."""
    row = telling_row("bigram", [5, 9, last], STEP_ORDER)
    ranked, kept = _ranked(last), _kept(last)
    gap = sorted(int(t) for t in ranked[kept["draft"]:min(v for name, v in kept.items() if name != "draft")])
    assert list(row.gap) == gap
    assert sum(row.q) == pytest.approx(1.0, abs=1e-6) and all(row.q[t] > 0 for t in gap)
    assert all(value == 0.0 for token, value in enumerate(row.q) if token not in gap)
    sorted_logits = bigram_logits(last)[ranked]
    for name, count in kept.items():
        weights = np.exp(sorted_logits[:count] / T - sorted_logits[0] / T)
        p = dict(zip(ranked[:count].tolist(), (weights / weights.sum()).tolist(), strict=True))
        for token in gap:
            if name == "draft":
                assert token not in p
            else:
                assert p[token] / row.q[token] >= row.margin * (1 - 1e-9) > 0


def test_the_chosen_seed_puts_the_acceptance_value_below_the_margin() -> None:
    class _Ctx:
        rng = random.Random(5)

    session = bytes(range(16))
    for margin in (0.05, 0.13):
        seed = telling_seed(_Ctx(), session, 1, margin)  # type: ignore[arg-type]
        assert oracle.uniform(seed, session, 1, 1, oracle.PURPOSE_ACCEPT) < margin
