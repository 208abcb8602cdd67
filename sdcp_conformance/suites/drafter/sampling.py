"""Sampling from exactly the published row (§5.2) and never from §6.4's HMAC derivation: sequential tests.

Both cases feed an e-process (:mod:`sdcp_conformance.oracle.drafter_sampling`)
with every rule-2 proposal's published rows and tokens and stop as soon as it
crosses 1/alpha; the certification's false-alarm probability for the two of
them together is at most :data:`~sdcp_conformance.oracle.drafter_sampling.DRAFTER_ALPHA`
(1e-6, split evenly: Bonferroni), whatever the drafter's randomness, by
Ville's inequality. The harness plays the verifier: it accepts every token
(so every round contributes M draws) and emits as the additional token one
of the tokens after which the draft and target rows differ most
(:func:`~sdcp_conformance.oracle.drafter_simulation.steering_tokens`, D-JUDGE-D6).
Two sessions interleave, one at temperature 0.125 (where p and the near draft
model differ most), one at temperature 1 (where rows are wide and a drafter
that is greedy, replays its uniforms or uses a fixed u stands out). The
evidence ends with the power statement: for each bug family, whether these
very rows would have convicted a drafter following it.
"""

from __future__ import annotations

import numpy as np

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.oracle.drafter_sampling import DRAFTER_ALPHA, ExactRowTest, hmac_alternatives, round_alternatives
from sdcp_conformance.oracle.drafter_simulation import profile_key, row_array, steering_tokens
from sdcp_conformance.oracle.statistics import case_alpha
from sdcp_conformance.suites.drafter import CATALOGUE

EXACT = "The drafter MUST sample each proposed token from exactly the row it publishes."
STATISTICAL_CASES = 2
EXACT_PROFILES = ({"temperature_milli": 125}, {"temperature_milli": 1000})
EXACT_ROUNDS = 120
"""Rounds of the exact-row test under the null (60 per session); a drafter following any family of the
benchmark is convicted well within it (``benchmarks/bench_drafter_sampling.py`` prints the figures)."""
HMAC_ROUNDS = 40
HMAC_SEED = 0x5DC9_2026


def _closed_form_or_skip(ctx: DrafterContext) -> None:
    for model in (ctx.draft_model, ctx.target_model):
        if mock_model(model).closed_form != "bigram":
            ctx.skip(f"the sampling test needs closed-form models; {model} has none")


def _contexts(session: PlayedSession, arrival: Arrival) -> list[int]:
    """The last context token of each proposed position (the bigram rows depend on it alone)."""
    tokens = list(arrival.proposal.tokens) if arrival.proposal is not None else []
    return [session.context()[-1], *tokens[:-1]]


def _knowledge(ctx: DrafterContext, session: PlayedSession, arrival: Arrival) -> tuple[np.ndarray, ...]:
    profile = profile_key(session.profile)
    lasts = _contexts(session, arrival)
    model = np.stack([row_array(ctx.draft_model, last, profile) for last in lasts])
    untempered = np.stack([row_array(ctx.draft_model, last, ()) for last in lasts])
    target = np.stack([row_array(ctx.target_model, last, profile) for last in lasts])
    return model, untempered, target


def _steer(ctx: DrafterContext, session: PlayedSession) -> int:
    tokens = steering_tokens(ctx.draft_model, ctx.target_model, profile_key(session.profile))
    return tokens[ctx.rng.randrange(len(tokens))]


async def _sampled_round(ctx: DrafterContext, session: PlayedSession, test: ExactRowTest, number: int, *,
                         hmac_seed: int | None = None) -> None:
    arrival = await ctx.take(session, f"rule-2 round {number}")
    proposal = arrival.proposal
    assert proposal is not None
    if arrival.rows is not None:
        if hmac_seed is not None:
            alternatives = hmac_alternatives(arrival.rows, hmac_seed, session.id, proposal.round)
        else:
            alternatives = round_alternatives(arrival.rows, *_knowledge(ctx, session, arrival))
        test.observe_round(arrival.rows, proposal.tokens, alternatives, what=arrival.describe())
    ctx.answer(session, arrival, ctx.verdict(session, arrival, bonus=_steer(ctx, session)))


@CATALOGUE.case("DRF-5.2-EXACT-ROW-001", area="sampling", section="5.2", level=Level.MUST,
                rows=("R-5.2-EXACT-ROW",), timeout_s=90.0,
                black_box_note="A statistical test: the drafter's draws are judged by an e-process with false-alarm "
                               "probability at most 5e-7 for this case (1e-6 for the certification's two sampling "
                               "cases); its power against each family is stated in the evidence.")
async def exact_row(ctx: DrafterContext) -> None:
    """Every proposed token is a draw from its published row (sequential test against named bug families)."""
    _closed_form_or_skip(ctx)
    # The second session's profile comes in the assignment's sampling member over the contract's (§5.2): a drafter
    # that publishes rows under one and draws under the other shows (found by a planted bug in an independent
    # drafter); one that ignores the member (MAY) draws and publishes alike.
    sessions = [await ctx.start(contract=ctx.contract(rule=2, sampling=EXACT_PROFILES[0]), m_init=8),
                await ctx.start(contract=ctx.contract(rule=2, sampling=EXACT_PROFILES[0]), m_init=8,
                                sampling=EXACT_PROFILES[1])]
    test = ExactRowTest(case_alpha(DRAFTER_ALPHA, STATISTICAL_CASES), ctx.rng)
    for number in range(EXACT_ROUNDS):
        await _sampled_round(ctx, sessions[number % 2], test, number // 2 + 1)
        if test.rejected:
            break
    summary = test.summary(f"{EXACT_ROUNDS} rounds")
    if test.rejected:
        ctx.deviate("R-5.2-EXACT-ROW", "the proposed tokens are not draws from the rows published for them:\n"
                    + summary, expected=["draws from the published rows"], actual=summary.splitlines()[0])
    else:
        ctx.note(summary)


@CATALOGUE.case("DRF-6.4-NOT-HMAC-001", area="sampling", section="6.4", level=Level.MUST_NOT,
                rows=("R-6.4-NOT-HMAC",), timeout_s=60.0,
                black_box_note="A statistical test with a seeded contract: components bet on the tokens §6.4's HMAC "
                               "uniforms would select from each published row (either purpose, 1- or 0-based "
                               "positions); false-alarm probability at most 5e-7 for this case.")
async def not_the_verifier_uniforms(ctx: DrafterContext) -> None:
    """With a seed in the contract, the drafter's draws do not follow the verifier's HMAC uniforms."""
    _closed_form_or_skip(ctx)
    contract = ctx.contract(rule=2, sampling={"temperature_milli": 1000, "seed": HMAC_SEED})
    session = await ctx.start(contract=contract, m_init=8)
    test = ExactRowTest(case_alpha(DRAFTER_ALPHA, STATISTICAL_CASES), ctx.rng, nonparametric=False)
    for number in range(HMAC_ROUNDS):
        await _sampled_round(ctx, session, test, number + 1, hmac_seed=HMAC_SEED)
        if test.rejected:
            break
    summary = test.summary(f"{HMAC_ROUNDS} rounds")
    if test.rejected:
        ctx.deviate("R-6.4-NOT-HMAC", "the drafter's draws follow §6.4's HMAC uniforms:\n" + summary,
                    expected=["draws independent of the verifier's derivation"], actual=summary.splitlines()[0])
    else:
        ctx.note(summary)
