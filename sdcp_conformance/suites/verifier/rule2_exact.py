"""Rule 2 (speculative sampling) exactness: §6.4 rule 2 with seeded HMAC values, P1-SAMP-1..4.

The harness is the drafter: it picks q rows, samples each proposed token
from exactly the row it publishes with its own random numbers, and computes
the verifier's outcome with the independent oracle (bigram closed form,
plain-Python sampling and HMAC). Acceptance decisions are strict (the draft
fixes them); the drawn token alone is profile-level (P1-SAMP-2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import started
from sdcp_conformance.suites.verifier.seeded_rule2 import (
    ORDER_ROW,
    ORDERS_NOTE,
    RULE2_ROWS,
    DraftedProposal,
    QSource,
    Row,
    Rule2Judge,
    as_published,
    avoiding_q,
    draft_q,
    draw_support,
    expected_rule2,
    flat_q,
    p_row,
    publish,
    rule2_round,
    sample_proposal,
    target_q,
)

RULE2_QUOTE = ("For each position, draw r uniformly from [0, 1). Accept x[i] if r < min(1, p[i](x[i]) / q[i](x[i])) "
               "... When the sampling profile contains a seed, the verifier derives each value from HMAC-SHA-256")
SAMP_PROFILE = ("P1-SAMP-1", "P1-SAMP-2", "P1-SAMP-3", "P1-SAMP-4")
SEEDED_NOTE = ("The drawn token is judged at profile level (P1-SAMP-2 fixes the inverse CDF): a mismatch of the "
               "drawn token alone is NON-STRICT; acceptance decisions and the support of the draw are strict.")


def _sampling(ctx: VerifierContext, **profile: int) -> dict[str, int]:
    return {"seed": ctx.rng.randrange(1, 2**63), **profile}


async def _seeded_session(ctx: VerifierContext, sampling: Mapping[str, int], **contract: Any) -> TrackedSession:
    return await started(ctx, rule=2, sampling=dict(sampling), max_new=contract.pop("max_new", 200), **contract)


async def _seeded_rounds(ctx: VerifierContext, sources: list[QSource], m: int, **profile: int) -> list[Verdict]:
    """Open a seeded rule-2 session and run one judged round per q source."""
    return await _judged_rounds(ctx, sources, m, profile)


async def _judged_rounds(ctx: VerifierContext, sources: list[QSource], m: int, profile: Mapping[str, int], *,
                         orders: bool = False) -> list[Verdict]:
    """:func:`_seeded_rounds` (``orders``: see :func:`rule2_round`)."""
    sampling = _sampling(ctx, **profile)
    session = await _seeded_session(ctx, sampling)
    judge = Rule2Judge(ctx)
    verdicts = []
    for source in sources:
        verdicts.append(await rule2_round(ctx, session, judge, source, min(m, _limit(session)), sampling,
                                          orders=orders))
    judge.finish()
    return verdicts


def _limit(session: TrackedSession) -> int:
    last = session.verdicts.get(session.round)
    return 4 if last is None else last.m_cap


@CATALOGUE.case(
    "VER-6.4-RULE2-001", area="rule-2", section="6.4", quote=RULE2_QUOTE, level=Level.MUST,
    profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE, rows=RULE2_ROWS,
)
async def near_drafter_round(ctx: VerifierContext) -> None:
    """A close drafter's proposal (temperature 1) gets exactly the seeded rule-2 outcome."""
    sampling = {"temperature_milli": 1000}
    await _seeded_rounds(ctx, [draft_q("bigram-draft-near", sampling)], 4, **sampling)


@CATALOGUE.case(
    "VER-6.4-RULE2-002", area="rule-2", section="6.4",
    quote="If all M tokens are accepted, the additional token is drawn from p[M+1].", level=Level.MUST,
    profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE, rows=RULE2_ROWS,
)
async def q_equals_p(ctx: VerifierContext) -> None:
    """q = p: every token is accepted and the bonus is drawn from p[M+1] with i = M+1 (P1-SAMP-3)."""
    sampling = {"temperature_milli": 1000}
    verdicts = await _seeded_rounds(ctx, [target_q("bigram", sampling)] * 2, 4, **sampling)
    ctx.note(f"accepted per round: {[v.accepted for v in verdicts]}")


@CATALOGUE.case(
    "VER-6.4-RULE2-003", area="rule-2", section="6.4",
    quote="At the first rejected position, the additional token is drawn from the normalized residual "
          "distribution max(0, p[i] - q[i]).", level=Level.MUST, profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE,
    rows=RULE2_ROWS,
)
async def residual_draw(ctx: VerifierContext) -> None:
    """A drafter whose mass sits where p is small is rejected early; the residual draw uses i = a+1."""
    sampling = {"temperature_milli": 1000}
    await _seeded_rounds(ctx, [avoiding_q("bigram", sampling), flat_q], 4, **sampling)


@CATALOGUE.case(
    "VER-6.4-RULE2-004", area="rule-2", section="4.1",
    quote="p is the target model's next-token distribution after applying temperature, top-k, and top-p in that "
          "order", level=Level.MUST, profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE, rows=RULE2_ROWS,
)
async def temperature_top_k(ctx: VerifierContext) -> None:
    """Temperature 0.7 with top-k 5: p built per P1-SAMP-1, outcomes exact."""
    sampling = {"temperature_milli": 700, "top_k": 5}
    await _seeded_rounds(ctx, [draft_q("bigram-draft-near", sampling), flat_q], 4, **sampling)


@CATALOGUE.case(
    "VER-6.4-RULE2-005", area="rule-2", section="4.1",
    quote="p is the target model's next-token distribution after applying temperature, top-k, and top-p in that "
          "order", level=Level.MUST, profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE + " " + ORDERS_NOTE,
    rows=(*RULE2_ROWS, ORDER_ROW),
)
async def top_p(ctx: VerifierContext) -> None:
    """Top-p 0.8 at temperature 1.2: p built per P1-SAMP-1, outcomes exact."""
    sampling = {"temperature_milli": 1200, "top_p_milli": 800}
    await _judged_rounds(ctx, [draft_q("bigram-draft-near", sampling), draft_q("bigram-draft-far", sampling)], 4,
                         sampling, orders=True)


@CATALOGUE.case(
    "VER-6.4-RULE2-006", area="rule-2", section="4.1",
    quote="a temperature of zero selects the most probable token (ties broken in favor of the smallest token "
          "identifier)", level=Level.MUST, profile=SAMP_PROFILE, rows=("R-4.1-SAMPLING",),
)
async def temperature_zero(ctx: VerifierContext) -> None:
    """Temperature 0 under rule 2: p is one-hot, so only the argmax is accepted and the residual is the argmax."""
    sampling = _sampling(ctx, temperature_milli=0)
    session = await _seeded_session(ctx, sampling)
    for _ in range(3):
        greedy = ctx.greedy(session, 2)
        accept_first = ctx.rng.random() < 0.5
        wrong = next(t for t in range(3, 128) if t != greedy[1 if accept_first else 0])
        tokens = [greedy[0], wrong] if accept_first else [wrong]
        a = len(tokens) - 1
        want = greedy[: a + 1]
        rows = [_mixture(session.model, [*session.context, *tokens[:i]]) for i in range(len(tokens))]
        verdict = await ctx.propose_ok(session, tokens, q_rows=publish(ctx, session, DraftedProposal(tokens, rows)))
        ctx.check(verdict.accepted == a and list(verdict.emitted) == want,
                  f"round {verdict.round}: with p one-hot, accepted {verdict.accepted} and emitted "
                  f"{list(verdict.emitted)}", expected=f"a = {a}, emitted {want}",
                  actual=f"a = {verdict.accepted}, emitted {list(verdict.emitted)}")


def _mixture(model: str, context: list[int]) -> Row:
    """Half the target's temperature-1 distribution, half uniform: positive everywhere."""
    p = p_row(model, context, {"temperature_milli": 1000})
    return as_published([0.5 * value + 0.5 / len(p) for value in p])


@CATALOGUE.case(
    "VER-6.4-RULE2-007", area="rule-2", section="6.4", quote=RULE2_QUOTE, level=Level.MUST,
    profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE, rows=RULE2_ROWS,
)
async def several_rounds(ctx: VerifierContext) -> None:
    """Six seeded rounds in a row, mixing close, far and equal drafters: every outcome exact."""
    sampling = {"temperature_milli": 1000}
    sources = [draft_q("bigram-draft-near", sampling), draft_q("bigram-draft-far", sampling),
               target_q("bigram", sampling), flat_q, draft_q("bigram-draft-near", sampling),
               avoiding_q("bigram", sampling)]
    await _seeded_rounds(ctx, sources, 4, **sampling)


ABSENT_TEMPERATURE = "Under rule 2 an absent temperature means 1.0."
ABSENT_ROUNDS = 4


@CATALOGUE.case(
    "VER-P1-NUM-1-TEMPERATURE-001", area="rule-2", section="P1-NUM-1, 4.1, 6.4",
    quote=f"{ABSENT_TEMPERATURE} ... {RULE2_QUOTE}", level=Level.PROFILE, profile=("P1-NUM-1", *SAMP_PROFILE),
    rows=("P1-NUM-1/ABSENT-TEMPERATURE", *RULE2_ROWS),
    black_box_note="The draft leaves a rule-2 profile without temperature_milli open; P1-NUM-1 reads it as 1.0. "
                   "A round whose outcome follows temperature 0 (p one-hot) instead is that profile's deviation "
                   "(NON-STRICT); an outcome that follows neither reading is judged by §6.4 as any seeded round.",
)
async def absent_temperature_is_one(ctx: VerifierContext) -> None:
    """A seeded rule-2 session whose profile names no temperature: every outcome is the one at temperature 1.0."""
    seed = ctx.rng.randrange(1, 2**63)
    session = await _seeded_session(ctx, {"seed": seed})
    one, zero = {"temperature_milli": 1000, "seed": seed}, {"temperature_milli": 0, "seed": seed}
    judge = Rule2Judge(ctx)
    sources = [draft_q("bigram-draft-near", one), flat_q, draft_q("bigram-draft-far", one), flat_q]
    for source in sources[:ABSENT_ROUNDS]:
        proposal = sample_proposal(ctx, session, source, min(4, _limit(session)))
        want, greedy = expected_rule2(session, proposal, one), expected_rule2(session, proposal, zero)
        support = draw_support(session, proposal, want.accepted, one)
        verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
        if (verdict.accepted, list(verdict.emitted)) != (want.accepted, list(want.emitted)) \
                and (verdict.accepted, list(verdict.emitted)) == (greedy.accepted, list(greedy.emitted)):
            ctx.deviate("P1-NUM-1/ABSENT-TEMPERATURE", f"round {verdict.round}: with no temperature in the profile "
                        f"the outcome is temperature 0's (accepted {verdict.accepted}, emitted "
                        f"{list(verdict.emitted)}), not 1.0's (accepted {want.accepted}, emitted "
                        f"{list(want.emitted)})", expected=[f"accepted {want.accepted}"],
                        actual=f"accepted {verdict.accepted}")
            return
        judge.judge(verdict, proposal, want, support)
    judge.finish()


PURPOSE_QUOTE = ("where purpose is 0 for the acceptance test and 1 for drawing the additional token, taking the "
                 "first 53 bits of the result divided by 2^53.")
PURPOSE_TRIES = 100
PURPOSE_ROUNDS = (4, 12)
"""Rounds that tell the purposes apart wanted, and the most rounds run looking for them."""


@CATALOGUE.case(
    "VER-6.4-RULE2-011", area="rule-2", section="6.4", quote=PURPOSE_QUOTE, level=Level.MUST,
    profile=SAMP_PROFILE, black_box_note=SEEDED_NOTE, rows=RULE2_ROWS,
)
async def purpose_bytes(ctx: VerifierContext) -> None:
    """Seeded rounds on which exchanging the purposes 0 and 1 would change the acceptance count.

    A round's HMAC values do not depend on the proposal, and a round tells the purposes apart only when some
    ratio min(1, p/q) lies between its two values, so the harness-as-drafter samples proposals from several
    drafters (each token from the row it publishes, as any drafter) until §6.4's outcome and the exchanged one
    differ, and runs further rounds until four did; every round is judged against §6.4's outcome alone.
    Without this choice a verifier using the wrong purpose passes some seeds."""
    sampling = _sampling(ctx, temperature_milli=1000)
    session = await _seeded_session(ctx, sampling)
    judge = Rule2Judge(ctx)
    sources = [draft_q("bigram-draft-far", sampling), flat_q, draft_q("bigram-draft-near", sampling),
               avoiding_q("bigram", sampling)]
    wanted, most = PURPOSE_ROUNDS
    telling = rounds = 0
    while telling < wanted and rounds < most:
        rounds += 1
        m = min(4, _limit(session))
        for attempt in range(PURPOSE_TRIES):
            proposal = sample_proposal(ctx, session, sources[attempt % len(sources)], m)
            expected = expected_rule2(session, proposal, sampling)
            exchanged = expected_rule2(session, proposal, sampling,
                                       purposes=(oracle.PURPOSE_DRAW, oracle.PURPOSE_ACCEPT))
            if exchanged.accepted != expected.accepted:
                telling += 1
                break
        support = draw_support(session, proposal, expected.accepted, sampling)
        verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
        judge.judge(verdict, proposal, expected, support)
    judge.finish()
    if telling < wanted:
        ctx.informational(f"only {telling} of {rounds} rounds told the purposes apart ({PURPOSE_TRIES} proposals "
                          "tried per round)")


@CATALOGUE.case(
    "VER-6.4-RULE2-008", area="rule-2", section="6.4",
    quote="Accept x[i] if r < min(1, p[i](x[i]) / q[i](x[i])) ... If all M tokens are accepted, the additional "
          "token is drawn from p[M+1].", level=Level.MUST, profile=("P1-SAMP-1",), rows=("R-6.4-RULE2",),
    black_box_note="Unseeded: the outcome does not depend on the verifier's random values because "
                   "p(x) >= q(x) at every position, so every token must be accepted.",
)
async def certain_acceptance(ctx: VerifierContext) -> None:
    """Without a seed, tokens with p(x) >= q(x) are always accepted and the bonus lies in top-k of p[M+1]."""
    sampling = {"temperature_milli": 1000, "top_k": 3}
    session = await started(ctx, rule=2, sampling=sampling)
    for _ in range(2):
        tokens: list[int] = []
        rows: list[Row] = []
        for _ in range(3):
            context = [*session.context, *tokens]
            p = p_row(session.model, context, sampling)
            rows.append(as_published([0.5 * value + 0.5 / len(p) for value in p]))
            tokens.append(max(range(len(p)), key=lambda t: (p[t], -t)))
        verdict = await ctx.propose_ok(session, tokens, q_rows=publish(ctx, session, DraftedProposal(tokens, rows)))
        _require_all_accepted(ctx, session, verdict, tokens, sampling)


def _require_all_accepted(ctx: VerifierContext, session: TrackedSession, verdict: Verdict, tokens: list[int],
                          sampling: Mapping[str, int]) -> None:
    if not ctx.check(verdict.accepted == len(tokens) and list(verdict.emitted[: len(tokens)]) == tokens,
                     f"round {verdict.round}: p(x) >= q(x) everywhere, yet accepted {verdict.accepted} of "
                     f"{len(tokens)}", expected=f"a = {len(tokens)}",
                     actual=f"a = {verdict.accepted}, emitted {list(verdict.emitted)}"):
        return
    prefix = session.context[: len(session.context) - 1]
    bonus_p = p_row(session.model, prefix, sampling)
    ctx.check(len(verdict.emitted) == len(tokens) + 1 and bonus_p[verdict.emitted[-1]] > 0.0,
              f"round {verdict.round}: the bonus token {verdict.emitted[-1]} is outside p[M+1]'s support "
              "(top-k 3)")


@CATALOGUE.case(
    "VER-6.4-RULE2-009", area="rule-2", section="6.4",
    quote="At the first rejected position, the additional token is drawn from the normalized residual "
          "distribution max(0, p[i] - q[i]).", level=Level.MUST, profile=("P1-SAMP-1",), rows=("R-6.4-RULE2",),
    black_box_note="Unseeded: a token with p(x) = 0 is rejected whatever r is, and the residual's support is "
                   "known; which token is drawn is random and not judged.",
)
async def certain_rejection(ctx: VerifierContext) -> None:
    """Without a seed, x[2] outside top-k (p = 0) is always rejected; the drawn token has p - q > 0."""
    sampling = {"temperature_milli": 1000, "top_k": 3}
    session = await started(ctx, rule=2, sampling=sampling)
    context = list(session.context)
    p1 = p_row(session.model, context, sampling)
    first = max(range(len(p1)), key=lambda t: (p1[t], -t))
    p2 = p_row(session.model, [*context, first], sampling)
    outside = next(t for t in range(3, 128) if p2[t] == 0.0)
    rows = [as_published([0.5 * v + 0.5 / len(p1) for v in p1]), as_published([0.5 * v + 0.5 / 128 for v in p2])]
    tokens = [first, outside]
    verdict = await ctx.propose_ok(session, tokens, q_rows=publish(ctx, session, DraftedProposal(tokens, rows)))
    if not ctx.check(verdict.accepted == 1 and list(verdict.emitted[:1]) == [first],
                     f"x[1] has p >= q and x[2] has p = 0: expected a = 1, got a = {verdict.accepted}",
                     expected="a = 1", actual=f"a = {verdict.accepted}, emitted {list(verdict.emitted)}"):
        return
    drawn = verdict.emitted[-1]
    residual = p2[drawn] - rows[1][drawn]
    ctx.check(len(verdict.emitted) == 2 and residual > 0.0,
              f"the additional token {drawn} has max(0, p - q) = 0: it is not drawn from the residual")


@CATALOGUE.case(
    "VER-6.4-RULE2-010", area="rule-2", section="6.4",
    level=Level.MUST, rows=("R-6.4-INDEPENDENT",),
    black_box_note="The verifier never sees the drafter's random values, so independence cannot be observed "
                   "directly. The case checks what is observable: without a seed, identical proposals in 30 "
                   "sessions do not all get the identical outcome (p = 0.5 acceptance, then a random draw; a "
                   "generator seeded from the request would repeat itself). Chance of a false failure < 2e-9.",
)
async def unseeded_values_vary(ctx: VerifierContext) -> None:
    """Unseeded rule 2: 30 sessions, one identical proposal each; the outcomes must not all coincide."""
    sampling = {"temperature_milli": 1000}
    outcomes = set()
    for _ in range(30):
        session = await started(ctx, rule=2, sampling=sampling)
        proposal = _half_chance(session, sampling)
        verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
        outcomes.add((verdict.accepted, tuple(verdict.emitted)))
    ctx.note(f"distinct outcomes: {sorted(outcomes)}")
    ctx.check(len(outcomes) > 1, "30 unseeded sessions with the same proposal all got the same outcome: the "
                                 "verifier's values look derived from the request, not from a CSPRNG",
              actual=str(sorted(outcomes)))


def _half_chance(session: TrackedSession, sampling: Mapping[str, int]) -> DraftedProposal:
    """One token x with q(x) = 2 p(x): accepted with probability 1/2; the rest of q follows p."""
    p = p_row(session.model, session.context, sampling)
    token = max((t for t in range(len(p)) if p[t] <= 0.4), key=lambda t: (p[t], -t))
    scale = (1.0 - 2 * p[token]) / (1.0 - p[token])
    row = [2 * p[t] if t == token else p[t] * scale for t in range(len(p))]
    return DraftedProposal([token], [as_published(row)])

