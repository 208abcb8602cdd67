"""The sanity conversation: open a session, assign a drafter, one valid round (runs first and last)."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.suites.verifier import CATALOGUE


@CATALOGUE.case(
    "VER-SANITY-001",
    area="sanity",
    section="6.1, 6.3",
    quote="The verifier validates the contract ... computes d[0], and answers with session-state (round 0, "
          "committed 0).",
    level=Level.MUST,
    sanity=True,
    rows=("R-6.1-OPEN", "R-6.4-RULE1"),
)
async def sanity(ctx: VerifierContext) -> None:
    """A session opens with the right d[0] and one greedy round commits the target's tokens."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    expected = ctx.greedy(session, 3)
    verdict = await ctx.propose_ok(session, expected[:2])
    ctx.check(list(verdict.emitted) == expected, "the round did not commit the target's greedy tokens",
              row="R-6.4-RULE1", expected=str(expected), actual=str(list(verdict.emitted)))
