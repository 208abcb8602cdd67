"""The rule-2 statistical oracle: exact laws, tolerance bounds, the e-process's validity and power."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.mutants.verifier.rule2_stats import ENGINES
from sdcp_conformance.oracle.rule2 import distribution as plain_distribution
from sdcp_conformance.oracle.rule2 import draw as plain_draw
from sdcp_conformance.oracle.rule2_designs import (
    DESIGNS,
    DraftedRound,
    design,
    draft_round,
    drafter_uniforms,
    sampling_for,
)
from sdcp_conformance.oracle.statistics import (
    FAMILIES,
    RoundLaw,
    Rule2EProcess,
    Tolerance,
    _robust_means,
    alternative_matrix,
    alternatives,
    laws_with_alternatives,
    outcome_law,
    robust_mean,
    sample_cell,
)
from sdcp_conformance.protocol.rules import rule2 as reference_rule2
from sdcp_conformance.protocol.rules import truncate


class _Uniforms:
    def __init__(self, generator: np.random.Generator) -> None:
        self._generator = generator

    def uniform(self, i: int, purpose: int) -> float:
        return float(self._generator.random())


def _law(name: str = "plus-minus", seed: int = 3) -> RoundLaw:
    plan = design(name)
    uniforms = drafter_uniforms(random.Random(seed), plan.m)
    drafted = draft_round(plan, list(plan.prompt(0)), plan.sampling, plan.m, uniforms, Tolerance())
    return drafted.law


@pytest.mark.parametrize("name", [d.name for d in DESIGNS])
def test_exact_law_is_a_distribution_inside_its_bounds(name: str) -> None:
    law = _law(name)
    assert law.exact.sum() == pytest.approx(1.0, abs=1e-9)
    assert (law.lower_cells <= law.exact_cells + 1e-15).all()
    assert (law.exact_cells <= law.upper_cells + 1e-15).all()
    assert law.lower_cells.sum() <= 1.0 + 1e-9 <= law.upper_cells.sum() + 2e-9


def test_marginal_over_x_is_min_p_q_and_residual() -> None:
    """Averaged over x ~ q, one position gives P(accept, x) = min(p, q)(x) and P(reject, y) = max(0, p - q)(y)."""
    plan = design("plus-minus")
    context = list(plan.prompt(0))
    base = draft_round(plan, context, plan.sampling, 1, [0.5], Tolerance()).law
    q = base.q[0]
    accept = np.zeros(q.size)
    reject = np.zeros(q.size)
    for x in np.flatnonzero(q):
        law = RoundLaw(base.p if int(x) == base.tokens[0] else _rows_for(context, int(x), plan.sampling),
                       q[None, :], (int(x),))
        accept[x] += q[x] * law.exact[1].sum()
        reject += q[x] * law.exact[0]
    assert np.allclose(accept, np.minimum(base.p[0], q), atol=1e-12)
    assert np.allclose(reject, np.maximum(0.0, base.p[0] - q), atol=1e-12)


def _rows_for(context: list[int], x: int, sampling: dict[str, int]) -> np.ndarray:
    from sdcp_conformance.oracle.statistics import target_row
    return np.stack([target_row("bigram", context, sampling), target_row("bigram", [*context, x], sampling)])


def test_reference_rule2_samples_match_the_exact_law() -> None:
    """A chi-square screen: the reference's rule 2 (the thing under test elsewhere) follows the oracle's law."""
    law = _law("plus-minus", seed=5)
    generator = np.random.default_rng(0)
    counts = np.zeros(law.cells)
    for _ in range(4000):
        outcome = reference_rule2(law.p, law.q, list(law.tokens), _Uniforms(generator))
        cell = law.cell_of(outcome.emitted)
        assert cell is not None and law.possible[cell]
        counts[cell] += 1
    expected = 4000 * law.exact_cells
    big = expected > 20
    chi2 = float((((counts - expected) ** 2)[big] / expected[big]).sum())
    assert chi2 < big.sum() + 6 * np.sqrt(2 * big.sum())


def test_stop_tokens_merge_cells() -> None:
    law = _law("stop-in-proposals", seed=11)
    if 2 in law.tokens:
        j = law.tokens.index(2)
        assert law.cell_of(list(law.tokens[: j + 1])) == law.labels[law.m, 5]
    assert law.exact_cells.sum() == pytest.approx(1.0)


def test_robust_mean_is_the_box_worst_case() -> None:
    lower = np.array([0.1, 0.2, 0.3])
    upper = np.array([0.5, 0.4, 0.3])
    g = np.array([3.0, 1.0, 0.0])
    # 0.4 of free mass goes to the highest g first: 0.4 onto cell 0.
    assert robust_mean(lower, upper, g) == pytest.approx(0.1 * 3 + 0.2 * 1 + 0.4 * 3)


def test_outcome_law_sums_to_one() -> None:
    accept = np.array([0.5, 0.25])
    draws = np.full((2, 4), 0.25)
    assert outcome_law(accept, draws, np.full(4, 0.25)).sum() == pytest.approx(1.0)


def simulated_rounds(name: str, engine: Callable[..., Any] | None, seed: int
                     ) -> Iterator[tuple[DraftedRound, list[int]]]:
    """A design's rounds, wave after wave, each drafted and answered by the reference's rule 2 or a mutant
    ``engine``: (the drafted round, its emission after truncation), without end."""
    plan = design(name)
    rng, generator = random.Random(seed), np.random.default_rng(seed)
    contexts = [list(plan.prompt(i)) for i in range(plan.sessions)]
    while True:
        for index in range(plan.sessions):
            drafted = draft_round(plan, contexts[index], plan.sampling, plan.m, drafter_uniforms(rng, plan.m),
                                  Tolerance())
            law = drafted.law
            if engine is None:
                emitted = reference_rule2(law.p, law.q, list(law.tokens), _Uniforms(generator)).emitted
            else:
                logits = np.stack([bigram_logits(([*contexts[index], *law.tokens[:i]])[-1]) for i in range(law.m + 1)])
                emitted = engine(logits, dict(plan.sampling), law.q, list(law.tokens), _Uniforms(generator)).emitted
            kept, finished = truncate(emitted, plan.stop, 10**9, 0)
            yield drafted, kept
            contexts[index] = list(plan.prompt(index)) if finished else [*contexts[index], *kept]


def _simulate(name: str, engine: Callable[..., Any] | None, seed: int, alpha: float, budget: int) -> Rule2EProcess:
    sessions = design(name).sessions
    test = Rule2EProcess(alpha, random.Random(seed + 1))
    for sent, (drafted, kept) in enumerate(simulated_rounds(name, engine, seed)):
        if sent % sessions == 0 and (sent >= budget or test.rejected):  # checked between waves
            break
        if drafted.counted:
            test.update(drafted.law, drafted.law.cell_of(kept))
    return test


@pytest.mark.parametrize("name", ["plus-minus", "step-order"])
def test_clean_simulation_never_reaches_a_loose_threshold_too_often(name: str) -> None:
    """At alpha = 0.2 the false-alarm rate over 20 short runs stays small (Ville: <= 0.2 each)."""
    alarms = sum(_simulate(name, None, seed, 0.2, 60).rejected for seed in range(20))
    assert alarms <= 8


@pytest.mark.parametrize("name, plan", [
    ("rule2-residual-softmax", "low-peak"), ("rule2-bonus-from-q", "q-equals-p"),
    ("rule2-bonus-from-p-m", "q-equals-p"), ("rule2-uniform-reused", "plus-minus"),
    ("rule2-q-one-hot", "plus-minus"), ("rule2-exact-match", "plus-minus"), ("rule2-ratio-inverted", "plus-minus"),
    ("rule2-rows-off-by-one", "plus-minus"), ("rule2-temperature-after-top-p", "step-order"),
    ("rule2-top-p-before-top-k", "step-order"),
])
def test_simulated_mutant_is_rejected_within_budget(name: str, plan: str) -> None:
    test = _simulate(plan, ENGINES[name], 7, 1e-6 / 9, 240)
    assert test.rejected, test.summary(240)


def test_alternatives_are_distributions() -> None:
    law = _law("profile-and-policy")
    for name, cells in alternatives(law).items():
        assert cells.sum() == pytest.approx(1.0, abs=1e-9), name


def test_sample_cell_stays_in_support() -> None:
    law = _law()
    generator = np.random.default_rng(1)
    assert all(law.possible[sample_cell(law, law.exact, generator)] for _ in range(50))


def _stopping_law() -> RoundLaw:
    """A stop-in-proposals round whose proposal holds the stop token, so that outcomes merge into cells."""
    plan = design("stop-in-proposals")
    for seed in range(50):
        law = _law(plan.name, seed)
        if set(law.tokens[:-1]) & law.stop:
            return law
    raise AssertionError("no seed proposed a stop token before the last position")


@pytest.mark.parametrize("make", [lambda: _law("profile-and-policy"), _stopping_law], ids=["plain", "merged"])
def test_batched_family_laws_equal_one_at_a_time(make: object) -> None:
    """alternative_matrix computes every family in one batch; each row must be that family's own law on cells."""
    law = make()  # type: ignore[operator]
    names, matrix = alternative_matrix(law)
    assert law.cells < (law.m + 1) * law.p.shape[1] or make is not _stopping_law
    for name, row in zip(names, matrix, strict=True):
        if name.startswith("profile:"):
            variant = law.variants[name.split(":")[1]]
            draw_only = name.endswith(":draw-only")
            m = law.m
            rest = np.maximum(0.0, variant[:m] - law.q)
            accept = law.alpha if draw_only else np.minimum(1.0, variant[np.arange(m), list(law.tokens)] / law.qx)
            draws = rest / rest.sum(axis=1, keepdims=True)
            one = outcome_law(accept, draws, variant[m] / variant[m].sum())
        else:
            one = outcome_law(*FAMILIES[name](law))
        merged = np.bincount(law.labels.ravel(), weights=one.ravel(), minlength=law.cells)
        np.testing.assert_allclose(row, merged, rtol=0, atol=1e-15, err_msg=name)


_LAW_MEMBERS = ("px", "qx", "alpha", "residual", "z", "draws", "exact", "labels", "exact_cells", "lower_cells",
                "upper_cells", "possible", "possible_cells")


def test_laws_of_many_rounds_equal_each_round_alone_to_the_last_bit() -> None:
    """laws_with_alternatives stacks rounds of one shape; the judge feeds batches whose size depends on
    timing, so each round's law and alternatives must be exactly (not nearly) what the round gives alone. The
    mix has every shape: stop tokens (merged cells), top-k ties, profile variants before and after a policy
    change, M from 2 to 8, and a round whose tolerance differs from the rest of its stack."""
    arguments = []
    for plan in DESIGNS:
        rng = random.Random(len(plan.name))
        context = list(plan.prompt(1))
        for session_round in (1, 2, 25, 26):
            sampling = dict(sampling_for(plan, session_round))
            drafted = draft_round(plan, context, sampling, plan.m, drafter_uniforms(rng, plan.m), Tolerance())
            arguments.append(drafted.spec.law_arguments())
            context.append(drafted.tokens[0])
    p, q, tokens, stop, variants, _, ties = arguments[3]
    arguments.append((p, q, tokens, stop, variants, Tolerance(2.0**-5), ties))
    assert any(a[3] & set(a[2]) for a in arguments) and any(a[6] is not None for a in arguments)
    assert len({(len(a[2]), tuple(a[4])) for a in arguments}) > 3
    for argument, (law, (names, matrix)) in zip(arguments, laws_with_alternatives(arguments), strict=True):
        alone = RoundLaw(*argument)
        for member in _LAW_MEMBERS:
            assert np.array_equal(getattr(law, member), getattr(alone, member)), member
        assert (law.cells, law.lower_mass, law.exact_mass) == (alone.cells, alone.lower_mass, alone.exact_mass)
        names_alone, matrix_alone = alternative_matrix(alone)
        assert names == names_alone
        assert np.array_equal(matrix, matrix_alone)


def test_robust_means_of_many_rows_equal_one_row_at_a_time() -> None:
    rng = np.random.default_rng(4)
    exact = rng.dirichlet(np.ones(300))
    lower, upper = exact * 0.98, np.minimum(1.0, exact * 1.02)
    g = rng.random((7, 300)) * (rng.random((7, 300)) < 0.8)
    g[3] = g[2]  # ties between rows and inside them
    g[4, :50] = 0.5
    np.testing.assert_allclose(_robust_means(lower, upper, g), [robust_mean(lower, upper, row) for row in g],
                               rtol=1e-13)


@pytest.mark.parametrize("name", ["plus-minus", "profile-and-policy", "q-equals-p"])
def test_a_round_bets_as_if_every_cell_took_part(name: str) -> None:
    """The e-process computes its bets on the possible cells only; its first round must give each mixed
    component the factor and power of the same bet over every cell (the robust mean one row at a time)."""
    law = _law(name)
    assert name == "q-equals-p" or not law.possible.all()
    cell = int(np.argmax(law.exact_cells))
    test = Rule2EProcess(0.05, random.Random(1))
    test.update(law, cell)
    names, matrix = alternative_matrix(law)
    upper, lower = law.upper_cells, law.lower_cells
    for family, alternative in zip(names, matrix, strict=True):
        for weight in (0.25, 0.75):
            bet = (1 - weight) * law.exact_cells + weight * alternative
            g = np.where(upper > 0, bet / np.where(upper > 0, upper, 1.0), 0.0)
            norm = robust_mean(lower, upper, g)
            live = law.possible & (bet > 0)
            power = float(np.sum(bet[live] * np.log(g[live] / norm)))
            miss = math.log(bet[law.possible].sum() / bet.sum())
            component = test.components[f"{family}@{weight}"]
            assert component.log_wealth == pytest.approx(math.log(g[cell] / norm), rel=1e-9, abs=1e-12), family
            assert component.power_log == pytest.approx(power, rel=1e-9, abs=1e-12), family
            assert component.power_miss == pytest.approx(miss, rel=1e-9, abs=1e-12), family


def test_drafted_tokens_follow_the_published_rows_by_p1_samp_2() -> None:
    """draft_round draws by P1-SAMP-2 from exactly the rows it publishes (§5.2), as the plain statement does."""
    for plan in DESIGNS:
        values = drafter_uniforms(random.Random(plan.name), plan.m)
        drafted = draft_round(plan, list(plan.prompt(0)), plan.sampling, plan.m, values, Tolerance())
        expected = [plain_draw(row.tolist(), u) for row, u in zip(drafted.q, values, strict=True)]
        assert list(drafted.tokens) == expected, plan.name
        for i in range(len(drafted.tokens)):  # and each row is the one after the token before it
            last = drafted.tokens[i - 1] if i else plan.prompt(0)[-1]
            p = plain_distribution(bigram_logits(last).tolist(), plan.sampling, 2)
            np.testing.assert_allclose(drafted.law.p[i], p, rtol=0, atol=1e-15)
