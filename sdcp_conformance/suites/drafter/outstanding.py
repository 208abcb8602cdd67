"""One outstanding proposal per session (§6.2), observed while the harness holds a verdict back.

"A drafter MUST NOT have more than one outstanding proposal per session. It
MAY prepare the next proposal speculatively, assuming full acceptance, but
sends it only after the verdict confirms that assumption." The harness plays
the verifier, so it simply does not answer: any different proposal for the
session that arrives meanwhile is a second outstanding one (the played
verifier judges that on every arrival, ambient). An identical copy is a
retry after the drafter's own timeout, which §6.9 allows.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import hold, tokens_of
from sdcp_conformance.suites.drafter.discard import judge_drafted_from_committed, partly_rejected
from sdcp_conformance.suites.drafter.variants import with_ctx_variant

SPECULATIVE = ("A drafter MUST NOT have more than one outstanding proposal per session. ... It MAY prepare the next "
               "proposal speculatively, assuming full acceptance, but sends it only after the verdict confirms that "
               "assumption.")
HOLD_S = 1.0
"""How long the harness keeps a verdict back (shorter than the embedded drafter's proposal timeout)."""


@CATALOGUE.case("DRF-6.2-OUTSTANDING-001", area="outstanding", section="6.2", quote=SPECULATIVE, level=Level.MUST,
                rows=("R-6.2-SPECULATIVE",))
async def held_verdict(ctx: DrafterContext) -> None:
    """While round 1's verdict is held back, no other proposal for the session arrives; after it, round 2 does."""
    session = await ctx.start(rule=1, m_init=4)
    first = await ctx.take(session, "round 1")
    seen = await hold(ctx, session, max(HOLD_S, ctx.pace.quiet_window()))
    others = [arrival for arrival in seen if arrival.key != first.key]
    ctx.check(not others, f"{len(others)} other proposal(s) arrived while round 1 was unanswered",
              expected="none until the verdict", actual=", ".join(a.describe() for a in others))
    ctx.answer(session, first, ctx.verdict(session, first, accepted=len(tokens_of(first))))
    await ctx.decide(session, "round 2, after the verdict")


@with_ctx_variant("DRF-6.2-OUTSTANDING-002", "DRF-6.2-OUTSTANDING-004", area="outstanding", section="6.2, 6.3",
                  quote=f"{SPECULATIVE} ... After the verdict, the drafter MUST discard its draft state for proposed "
                        "positions beyond the accepted ones",
                  level=Level.MUST, profile=("P1-DRF-4",), rows=("R-6.2-SPECULATIVE", "R-6.3-DISCARD", "P1-DRF-4"))
async def assumption_refuted(ctx: DrafterContext) -> None:
    """A held verdict that accepts nothing: the next proposal is built on the emitted token, not on full acceptance."""
    session = await ctx.start(rule=1, m_init=4)
    first = await ctx.take(session, "round 1")
    answered, _, second = await partly_rejected(ctx, session, first, lambda m: [0], hold_s=HOLD_S)
    bonus = session.output[-1]
    judge_drafted_from_committed(ctx, session, answered, 0, second, f"the proposal after the emitted token {bonus} (a "
                                 "speculative draft assuming full acceptance would continue the drafter's own tokens)")


@CATALOGUE.case("DRF-6.2-OUTSTANDING-003", area="outstanding", section="6.2", quote=SPECULATIVE, level=Level.MUST,
                rows=("R-6.2-SPECULATIVE",))
async def per_session(ctx: DrafterContext) -> None:
    """Two sessions: each has one proposal outstanding; answering one lets only that one proceed."""
    first_session = await ctx.start(rule=1)
    second_session = await ctx.start(rule=1, prompt=(7, 8))
    a = await ctx.take(first_session, "session A round 1")
    b = await ctx.take(second_session, "session B round 1")
    ctx.answer(first_session, a, ctx.verdict(first_session, a))
    await ctx.take(first_session, "session A round 2")
    seen = await hold(ctx, second_session, HOLD_S)
    others = [arrival for arrival in seen if arrival.key != b.key]
    ctx.check(not others, "session B sent another proposal while its round 1 was unanswered",
              expected="none", actual=", ".join(arrival.describe() for arrival in others))
