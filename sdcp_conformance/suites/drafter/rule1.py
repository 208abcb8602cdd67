"""Rule 1 (P1-DRF-4): the drafter proposes its own greedy tokens and publishes no q_rows.

The draft model's greedy continuation is computed by the harness from its
closed form (:mod:`sdcp_conformance.oracle.greedy`); the played verifier
compares every rule-1 proposal with it (after the committed prefix it
extends) and checks that no q_rows member is sent.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import rounds


@CATALOGUE.case("DRF-P1-DRF-4-001", area="rule-1", section="P1-DRF-4, 6.4", level=Level.PROFILE,
                rows=("P1-DRF-4",))
async def greedy_tokens(ctx: DrafterContext) -> None:
    """Eight rule-1 rounds under the target's own rule-1 verdicts: greedy draft tokens, no q_rows member."""
    session = await ctx.start(rule=1, m_init=4)
    await rounds(ctx, session, 8)


@CATALOGUE.case("DRF-P1-DRF-4-002", area="rule-1", section="P1-DRF-4", level=Level.PROFILE,
                rows=("P1-DRF-4",))
async def greedy_after_other_prompts(ctx: DrafterContext) -> None:
    """Greedy draft tokens after prompts that end in every kind of bigram row (ties included)."""
    for prompt in ((3,), (11, 4), (17, 18, 19), (100, 2), (63,)):
        session = await ctx.start(rule=1, prompt=prompt, m_init=6)
        await rounds(ctx, session, 2, accepted=0)
