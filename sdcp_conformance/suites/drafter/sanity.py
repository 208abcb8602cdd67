"""The sanity conversation: an assignment, a proposal, a verdict, the next proposal (runs first and last)."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.suites.drafter import CATALOGUE


@CATALOGUE.case(
    "DRF-SANITY-001",
    area="sanity",
    section="6.2, 6.5.2",
    level=Level.MUST,
    rows=("R-6.5.2-CONTINUE",),
    sanity=True,
)
async def sanity(ctx: DrafterContext) -> None:
    """An assigned rule-1 session gets a proposal, and after a verdict the next one (judged on the ambient rows only:
    a profile deviation here must not stop the certification, P1-JUDGE-3)."""
    session = await ctx.start(rule=1)
    await ctx.decide(session, "the first proposal")
    await ctx.decide(session, "the proposal after a continue verdict")
