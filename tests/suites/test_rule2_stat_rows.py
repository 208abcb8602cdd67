"""A statistical case's rejection names the sentence its evidence points to (D-JUDGE-STAT-ROW).

The tests build e-processes by hand (components and their wealth, a decisive outcome and the families under which
it is possible) and read the row :func:`evidence_row` gives, so each rule of the decision is pinned apart from
the statistics that feed it; ``test_planted_node_blind_spots.py`` runs the same decision on real mutants.
"""

from __future__ import annotations

import random

import numpy as np

from sdcp_conformance.oracle.rule2_designs import design, draft_round, drafter_uniforms, sampling_for
from sdcp_conformance.oracle.statistics import Component, Rule2EProcess, Tolerance, alternative_matrix
from sdcp_conformance.suites.verifier.rule2_stats import EVIDENCE, EVIDENCE_MARGIN, RULE2_ROW, evidence_row

IDENTICAL = EVIDENCE["identical-sessions"]
PROFILE = EVIDENCE["profile-and-policy"]


def _test(*wealth: tuple[str, float], decisive: str = "", explained_by: tuple[str, ...] = ()) -> Rule2EProcess:
    test = Rule2EProcess(1e-6, random.Random(0))
    test.components = {name: Component(name, log_wealth=value) for name, value in wealth}
    test.decisive, test.explained_by = decisive, explained_by
    return test


def test_the_memory_bet_far_ahead_names_independence_in_the_identical_sessions_design() -> None:
    row, words = evidence_row(_test(("memory", 20.0), ("bonus-from-p[M]@0.75", 3.0)), IDENTICAL)
    assert row == "R-6.4-INDEPENDENT"
    assert "memory" in words


def test_a_rule2_family_as_strong_as_the_memory_bet_keeps_the_finding_on_rule_2() -> None:
    close = 20.0 - EVIDENCE_MARGIN / 2
    assert evidence_row(_test(("memory", 20.0), ("bonus-from-p[M]@0.75", close)), IDENTICAL) == (RULE2_ROW, "")
    assert evidence_row(_test(("bonus-from-p[M]@0.75", 20.0), ("memory", 5.0)), IDENTICAL) == (RULE2_ROW, "")


def test_a_design_without_evidence_of_its_own_always_names_rule_2() -> None:
    assert evidence_row(_test(("memory", 30.0), ("pit-histogram", 1.0)), {}) == (RULE2_ROW, "")


def test_an_impossible_outcome_possible_only_under_profile_families_names_the_profile() -> None:
    test = _test(decisive="round 1: impossible", explained_by=("profile:untruncated", "profile:top-p-before-top-k"))
    row, words = evidence_row(test, PROFILE)
    assert row == "R-4.1-SAMPLING"
    assert "profile:untruncated" in words


def test_an_impossible_outcome_that_a_rule2_family_explains_too_names_rule_2_before_any_gain() -> None:
    test = _test(decisive="round 1: impossible", explained_by=("profile:untruncated", "bonus-from-q"))
    assert evidence_row(test, PROFILE) == (RULE2_ROW, "")


def test_after_an_impossible_outcome_only_the_families_that_explain_it_are_weighed() -> None:
    """The memory bet gained most, but cannot produce the outcome: the profile family that can, far ahead of the
    rule-2 family that can too, is the evidence."""
    test = _test(("memory", 30.0), ("profile:untempered:draw-only@0.75", 6.0), ("residual-from-p@0.25", 1.0),
                 decisive="round 9: impossible", explained_by=("profile:untempered:draw-only", "residual-from-p"))
    assert evidence_row(test, PROFILE)[0] == "R-4.1-SAMPLING"
    test.components["residual-from-p@0.25"].log_wealth = 5.0
    assert evidence_row(test, PROFILE) == (RULE2_ROW, "")


def test_an_impossible_outcome_records_the_families_that_give_it_a_chance() -> None:
    """The e-process keeps, at the decisive round, each family under which the observed cell has probability."""
    plan = design("mode-boost")
    rng = random.Random(3)
    tolerance = Tolerance(2.0 ** -8)
    for _ in range(50):
        drafted = draft_round(plan, [5, 9, 11], sampling_for(plan, 1), plan.m, drafter_uniforms(rng, plan.m),
                              tolerance)
        law = drafted.spec.law()
        names, matrix = alternative_matrix(law)
        cells = np.flatnonzero(~law.possible & (matrix.max(axis=0) > 0))
        if cells.size:
            break
    else:
        raise AssertionError("no round had a cell impossible under the null that a family makes possible")
    cell = int(cells[0])
    test = Rule2EProcess(1e-6, random.Random(0))
    test.update(law, cell, "round 1")
    assert test.rejected and test.decisive
    assert test.explained_by == tuple(name for name, chance in zip(names, matrix[:, cell], strict=True) if chance > 0)
    assert test.explained_by and set(test.explained_by) < set(names)
    assert "possible under the alternatives" in test.decisive


def test_an_impossible_outcome_only_profile_families_explain_names_the_profile_whatever_they_gained() -> None:
    """Gains of the explaining families do not matter when they all point at one sentence."""
    test = _test(("profile:temperature-after-top-p@0.25", 0.4), ("memory", 2.0), decisive="round 3: impossible",
                 explained_by=("profile:temperature-after-top-p", "profile:untruncated"))
    assert evidence_row(test, EVIDENCE["step-order"])[0] == "R-4.1-SAMPLING"


def test_after_an_impossible_outcome_the_exact_law_is_no_rival() -> None:
    """The outcome ruled the exact law out: a profile family far ahead of the rule-2 family that explains the
    outcome too names the profile though neither gained against the exact law; close behind, rule 2."""
    test = _test(("profile:top-p-first@0.25", -0.5), ("ratio-inverted@0.25", -0.5 - 2 * EVIDENCE_MARGIN),
                 decisive="round 9: impossible", explained_by=("profile:top-p-first", "ratio-inverted"))
    assert evidence_row(test, EVIDENCE["step-order"])[0] == "R-4.1-SAMPLING"
    test.components["ratio-inverted@0.25"].log_wealth = -0.5 - EVIDENCE_MARGIN / 2
    assert evidence_row(test, EVIDENCE["step-order"]) == (RULE2_ROW, "")
