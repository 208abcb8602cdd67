"""A statistical case's test rebuilt from small round specs, wherever it runs, decides as the e-process fed directly.

The laws are checked against laws built the way the suite built them before the split (rows from the full
contexts), and the judge's decisions against a :class:`TracedEProcess` fed round by round — for a clean
verifier and for a mutant the test rejects, in batches of every size.
"""

from __future__ import annotations

import random
from dataclasses import fields

import numpy as np
import pytest

from sdcp_conformance.mutants.verifier.rule2_stats import ENGINES
from sdcp_conformance.oracle.rule2_designs import (
    DESIGNS,
    MODEL,
    avoid_fragile,
    design,
    draft_round,
    draft_row,
    drafter_uniforms,
    published,
    sampling_for,
)
from sdcp_conformance.oracle.rule2_judge import JudgedRound, Rule2Judge, close_judge, feed_judge, open_judge
from sdcp_conformance.oracle.rule2_trace import TracedEProcess
from sdcp_conformance.oracle.statistics import RoundLaw, Tolerance, profile_variants, target_row, topk_ties
from tests.oracle.test_statistics import simulated_rounds


def _law_from_contexts(context: list[int], tokens: tuple[int, ...], plan_name: str, sampling: dict[str, int],
                       rho: float) -> RoundLaw:
    """A round's law as the suite built it before RoundSpec: every row from the full context it follows."""
    plan = design(plan_name)
    contexts = [[*context, *tokens[:i]] for i in range(len(tokens) + 1)]
    p = np.stack([target_row(MODEL, c, sampling) for c in contexts])
    rows = [draft_row(plan.q_kind, c, sampling) for c in contexts[:-1]]
    if sampling.get("top_p_milli", 1000) < 1000:
        rows = [avoid_fragile(row, sampling) for row in rows]
    q = np.stack([published(row) for row in rows])
    ties = np.stack([topk_ties(MODEL, c, sampling) for c in contexts])
    return RoundLaw(p, q, tokens, frozenset(plan.stop), profile_variants(MODEL, contexts, sampling), Tolerance(rho),
                    ties if ties.any() else None)


@pytest.mark.parametrize("name", [d.name for d in DESIGNS])
def test_a_spec_rebuilds_the_law_of_the_full_contexts(name: str) -> None:
    plan = design(name)
    rng = random.Random(7)
    context = [*plan.prompt(1), 40, 77, 12, 90]  # a long context: only its last token may matter
    for session_round in (1, 30):
        sampling = dict(sampling_for(plan, session_round))
        drafted = draft_round(plan, context, sampling, plan.m, drafter_uniforms(rng, plan.m), Tolerance())
        rebuilt = drafted.spec.law()
        expected = _law_from_contexts(context, drafted.tokens, name, sampling, Tolerance().rho)
        for member in ("p", "q", "exact", "exact_cells", "lower_cells", "upper_cells", "labels"):
            assert np.array_equal(getattr(rebuilt, member), getattr(expected, member)), (name, member)
        assert rebuilt.variants.keys() == expected.variants.keys()
        for key in expected.variants:
            assert np.array_equal(rebuilt.variants[key], expected.variants[key])
        assert (rebuilt.ambiguous is None) == (expected.ambiguous is None)
        assert rebuilt.tokens == expected.tokens and rebuilt.stop == expected.stop


def _rounds(name: str, engine: str | None, seed: int, count: int) -> list[JudgedRound]:
    """``count`` rounds of a design answered by the reference's rule 2 or a mutant engine."""
    simulated = simulated_rounds(name, None if engine is None else ENGINES[engine], seed)
    return [JudgedRound(drafted.spec, tuple(kept), drafted.counted, f"round {index + 1}")
            for index, (drafted, kept) in zip(range(count), simulated, strict=False)]


def _fed_directly(rounds: list[JudgedRound], alpha: float, seed: float) -> tuple[TracedEProcess, int]:
    """The e-process fed one round at a time, stopping at the first rejection (what the suite did inline)."""
    test = TracedEProcess(alpha, random.Random(seed))
    judged = 0
    for judged_round in rounds:
        if test.rejected:
            break
        judged += 1
        if judged_round.counted:
            law = judged_round.spec.law()
            test.update(law, law.cell_of(judged_round.emitted), judged_round.what)
    return test, judged


def _same_test(one: TracedEProcess, other: TracedEProcess) -> None:
    assert one.trace() == other.trace()
    assert one.summary(240) == other.summary(240)
    assert (one.rounds, one.decisive, one.log_e, one.max_log_e) == (other.rounds, other.decisive, other.log_e,
                                                                      other.max_log_e)


@pytest.mark.parametrize(("name", "engine", "rejects"), [("plus-minus", None, False),
                                                          ("mode-boost", "rule2-residual-softmax", True)])
def test_the_judge_fed_in_batches_decides_as_the_e_process_fed_round_by_round(
        name: str, engine: str | None, rejects: bool) -> None:
    rounds = _rounds(name, engine, seed=4, count=60)
    alpha, seed = 1e-3, 0.25
    expected, judged = _fed_directly(rounds, alpha, seed)
    assert expected.rejected is rejects
    assert judged < len(rounds) if rejects else judged == len(rounds)
    batches = random.Random(1)
    judge = Rule2Judge(alpha, seed)
    start = 0
    while start < len(rounds):
        size = batches.randint(1, 9)
        judge.feed(rounds[start:start + size])
        start += size
    assert judge.judged == judged  # nothing after the rejection is fed
    _same_test(judge.result(), expected)


def test_the_worker_calls_keep_one_judge_per_key() -> None:
    rounds = _rounds("low-peak", None, seed=9, count=20)
    judges: dict[str, Rule2Judge] = {}
    open_judge(judges, "a", 1e-3, 0.5)
    open_judge(judges, "b", 1e-3, 0.5)
    assert feed_judge(judges, "a", rounds[:10]) is False
    feed_judge(judges, "b", rounds)
    feed_judge(judges, "a", rounds[10:])
    (one, judged_one), (other, judged_other) = close_judge(judges, "a"), close_judge(judges, "b")
    assert judges == {} and judged_one == judged_other == 20
    _same_test(one, other)


def test_a_judged_round_is_small_whatever_the_context() -> None:
    """What crosses to the worker names no context, only its last token."""
    plan = design("many-sessions")
    drafted = draft_round(plan, list(range(3, 120)), plan.sampling, plan.m, [0.3] * plan.m, Tolerance())
    assert {f.name for f in fields(drafted.spec)} == {"q_kind", "stop", "profile", "last", "tokens", "rho"}
    assert drafted.spec.last == 119
