"""The RECOMMENDED choice of M (§6.2): observed, INFORMATIONAL.

"Choice of M is local to the drafter. The following rule is RECOMMENDED."
The rule maximises the expected tokens per round over (M * t_d + t_v), so M
falls when every token is rejected (alpha falls), falls when the MLC is slow
to take the rows (t_d includes writing them "at the cache bandwidth
currently available"), and rises when verification is slow (t_v). The
harness plays the verifier and the MLC, so it makes each happen and reports
what M did; none of it can fail a certification.
"""

from __future__ import annotations

from statistics import mean

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import PlayedSession
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import hold

RECOMMENDED = ("The following rule is RECOMMENDED. ... the drafter chooses the M within its limits that maximizes "
               "that quantity divided by (M * t_d + t_v). A loaded drafter thereby proposes fewer tokens, and a "
               "drafter whose cache bandwidth is scarce does the same.")
ROW = "R-6.2-CHOICE-OF-M"
SLOW_CACHE_BYTES_PER_S = 512 / 0.02
"""One 128-entry binary32 row per 20 ms: scarce bandwidth that costs much more than drafting a token."""
SLOW_VERDICT_S = 0.15
WARM_UP = 8
"""Fast rounds first: what earlier cases taught the drafter about t_d and t_v (EWMAs) is forgotten, so the
baseline is this case's own."""


def _geometric(ctx: DrafterContext, m: int, alpha: float = 0.75) -> int:
    accepted = 0
    while accepted < m and ctx.rng.random() < alpha:
        accepted += 1
    return accepted


async def _phase(ctx: DrafterContext, session: PlayedSession, rounds: int, *, rejected: bool = False,
                 hold_s: float = 0.0) -> list[int]:
    sizes = []
    ctx.pace.paused = bool(hold_s) or ctx.cache.bandwidth_bytes_per_s is not None
    for number in range(rounds):
        arrival = await ctx.take(session, f"round {number + 1} of a phase")
        sizes.append(arrival.m)
        if hold_s:
            await hold(ctx, session, hold_s)
        accepted = 0 if rejected else _geometric(ctx, arrival.m)
        ctx.answer(session, arrival, ctx.verdict(session, arrival, accepted=accepted))
    ctx.pace.paused = False
    return sizes


@CATALOGUE.case("DRF-6.2-CHOICE-OF-M-001", area="choice-of-m", section="6.2",
                level=Level.RECOMMENDED, rows=(ROW,))
async def falls_when_rejected(ctx: DrafterContext) -> None:
    """Every token rejected for eight rounds: M falls."""
    session = await ctx.start(rule=1, m_init=8)
    before = await _phase(ctx, session, 4)
    after = await _phase(ctx, session, 8, rejected=True)
    ctx.note(f"M before: {before}; while everything is rejected: {after}")
    if not (after[-1] < max(before) or after[-1] == 1):
        ctx.informational(f"M did not fall while every token was rejected ({before} then {after})", row=ROW)


@CATALOGUE.case("DRF-6.2-CHOICE-OF-M-002", area="choice-of-m", section="6.2",
                level=Level.RECOMMENDED, rows=(ROW,))
async def falls_when_the_cache_is_slow(ctx: DrafterContext) -> None:
    """The MLC takes rows at 25 kB/s: M falls below what it was with a fast cache."""
    session = await ctx.start(rule=2, m_init=8)
    await _phase(ctx, session, WARM_UP)
    before = await _phase(ctx, session, 5)
    ctx.cache.bandwidth_bytes_per_s = SLOW_CACHE_BYTES_PER_S
    try:
        after = await _phase(ctx, session, 8)
    finally:
        ctx.cache.bandwidth_bytes_per_s = None
    ctx.note(f"M with a fast cache: {before}; with a slow one: {after}")
    if not mean(after[-4:]) < mean(before) and after[-1] != 1:
        ctx.informational(f"M did not fall when the cache was slow ({before} then {after})", row=ROW)


@CATALOGUE.case("DRF-6.2-CHOICE-OF-M-003", area="choice-of-m", section="6.2",
                level=Level.RECOMMENDED, rows=(ROW,))
async def rises_when_verification_is_slow(ctx: DrafterContext) -> None:
    """Verdicts take 150 ms: M rises above what it was with fast verdicts."""
    session = await ctx.start(rule=1, m_init=8)
    await _phase(ctx, session, WARM_UP)
    before = await _phase(ctx, session, 5)
    after = await _phase(ctx, session, 8, hold_s=SLOW_VERDICT_S)
    ctx.note(f"M with fast verdicts: {before}; with slow ones: {after}")
    if not mean(after[-4:]) > mean(before) and after[-1] != session.m_max:
        ctx.informational(f"M did not rise when verification was slow ({before} then {after})", row=ROW)
