"""The exact-row e-process: valid under every null member, and powerful against every family the issue names.

Expectations are computed here from the formula (sums over the vocabulary), not by running the test; the
simulated drafters (:mod:`sdcp_conformance.oracle.drafter_simulation`) draw from the bigram closed forms.
False-alarm rates and rounds-to-reject over many seeds are the benchmark's (benchmarks/bench_drafter_sampling.py).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from sdcp_conformance.oracle.drafter_sampling import (
    DRAFTER_ALPHA,
    DRAFTER_RHO,
    ExactRowTest,
    bet_and_norm,
    invert,
    pit_density,
    powered,
)
from sdcp_conformance.oracle.drafter_simulation import KINDS, simulate
from sdcp_conformance.oracle.statistics import case_alpha
from sdcp_conformance.suites.drafter.sampling import EXACT_PROFILES, EXACT_ROUNDS, HMAC_ROUNDS, STATISTICAL_CASES

ALPHA = case_alpha(DRAFTER_ALPHA, STATISTICAL_CASES)
PROFILES = [tuple(sorted(profile.items())) for profile in EXACT_PROFILES]


def _rows(rng: np.random.Generator, count: int, size: int = 16) -> list[np.ndarray]:
    rows = []
    for _ in range(count):
        row = rng.dirichlet(np.full(size, 0.3))
        row[rng.random(size) < 0.2] = 0.0  # supports with holes, as top-k and underflow make them
        if row.sum() == 0:
            row[0] = 1.0
        rows.append(row / row.sum())
    return rows


def test_every_factor_has_expectation_at_most_one_under_every_null_member() -> None:
    rng = np.random.default_rng(7)
    for q in _rows(rng, 200):
        law = rng.dirichlet(np.ones(q.size))
        bet, norm = bet_and_norm(q, law, DRAFTER_RHO)
        factors = bet / norm
        # the extreme members of the tolerance ball: mass pushed towards the largest factors, within e^±rho
        up = q * np.where(factors >= np.median(factors[q > 0]), math.exp(DRAFTER_RHO), math.exp(-DRAFTER_RHO))
        for member in (q, up / up.sum()):
            assert float(np.dot(member, factors)) <= 1.0 + 1e-12


def test_the_pit_bet_is_a_density_whatever_the_counts() -> None:
    for counts in ([0.0] * 10, [5.0, 0, 0, 0, 0, 0, 0, 0, 0, 0], list(range(10))):
        assert float(np.mean(pit_density(counts))) == pytest.approx(1.0)


def test_inverse_cdf_draws_in_ascending_ids() -> None:
    row = np.array([0.25, 0.0, 0.5, 0.25])
    assert [invert(row, u) for u in (0.0, 0.2499, 0.25, 0.7499, 0.75, 0.9999)] == [0, 0, 2, 2, 3, 3]
    assert powered(np.array([0.5, 0.5, 0.0]), 2.0).tolist() == [0.5, 0.5, 0.0]


def test_a_token_its_row_excludes_is_decisive() -> None:
    test = ExactRowTest(ALPHA, random.Random(1))
    test.observe_round(np.array([[0.5, 0.5, 0.0]]), [2], [{}])
    assert test.rejected and "probability 0" in test.decisive


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_drafter_sampling_its_rows_is_not_rejected(seed: int) -> None:
    test = simulate("exact", seed=seed, alpha=ALPHA, rounds=EXACT_ROUNDS, m=8, profiles=PROFILES)
    assert not test.rejected and test.rounds == EXACT_ROUNDS
    assert test.max_log_e < test.threshold / 2, test.summary()
    # Power against every family on these very rows ("model-row" coincides with the null when the drafter
    # publishes its model's rows, as this one does, so there is nothing to detect).
    power = {family: yes for family, yes in test.powerful_against().items() if family != "model-row"}
    assert all(power.values()), test.power_statement()


@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind not in ("exact", "hmac")])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_family_is_rejected_within_the_case_budget(kind: str, seed: int) -> None:
    test = simulate(kind, seed=seed, alpha=ALPHA, rounds=EXACT_ROUNDS, m=8, profiles=PROFILES)
    assert test.rejected, f"{kind}: {test.summary()}"
    assert test.rounds <= EXACT_ROUNDS // 2, f"{kind} needed {test.rounds} rounds"


@pytest.mark.parametrize("seed", [1, 2])
def test_hmac_uniforms_are_found_and_independent_draws_are_not(seed: int) -> None:
    profile = [(("temperature_milli", 1000),)]
    found = simulate("hmac", seed=seed, alpha=ALPHA, rounds=HMAC_ROUNDS, m=8, profiles=profile, hmac_seed=11)
    assert found.rejected and found.rounds <= 10
    clean = simulate("exact", seed=seed, alpha=ALPHA, rounds=HMAC_ROUNDS, m=8, profiles=profile, hmac_seed=11)
    assert not clean.rejected and clean.max_log_e < clean.threshold / 2
