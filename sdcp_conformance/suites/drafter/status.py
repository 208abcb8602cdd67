"""Status reports (§6.1, §5.2, P1-RTR-1, P1-DRF-8): intervals shorter than ttl_ms, fields, accept_milli.

The harness is the drafter's router and receives its ``PUT instances/{id}/status``
reports; proposals carry a status member too (judged on every proposal,
ambient). ``accept_milli`` is "the EWMA of a/M" (P1-DRF-8): after every
verdict it moves towards 1000 * a/M of that verdict or stays, which the
harness checks over phases where every token is accepted and where none is.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.status_judging import INTERVAL, INTERVAL_ROW, RTR_1, judge_status_reports

ACCEPT = "`accept_milli` in status is the EWMA of a/M."


@CATALOGUE.case("DRF-6.1-STATUS-001", area="status", section="6.1, 5.2, P1-RTR-1", quote=f"{INTERVAL} ... {RTR_1}",
                level=Level.MUST, profile=("P1-RTR-1", "P1-ID-1"), rows=(INTERVAL_ROW, "P1-RTR-1/DRAFTER"))
async def reports_in_time(ctx: DrafterContext) -> None:
    """Five consecutive status reports: each within ttl_ms of the last, the mean gap of the last four under ttl_ms,
    at instances/<b64url(URI)>/status."""
    await judge_status_reports(ctx, ctx.router, base_uri=ctx.target.base_uri, role=1,
                               message_row="R-5.2-STATUS-MEMBER", path_row="P1-RTR-1/DRAFTER",
                               stall=ctx.patience.stall)


@CATALOGUE.case("DRF-P1-DRF-8-ACCEPT-001", area="status", section="P1-DRF-8, 5.2", level=Level.PROFILE,
                rows=("P1-DRF-8/ACCEPT-MILLI",))
async def accept_milli_follows(ctx: DrafterContext) -> None:
    """Six verdicts accepting everything, six accepting nothing: accept_milli moves towards 1000 a/M each time."""
    session = await ctx.start(rule=1, m_init=4)
    seen: list[tuple[int | None, float]] = []  # (accept_milli of a proposal, a/M of the verdict that followed)
    for number in range(12):
        arrival = await ctx.take(session, f"round {number + 1}")
        accepted = arrival.m if number < 6 else 0
        ctx.answer(session, arrival, ctx.verdict(session, arrival, accepted=accepted))
        milli = arrival.proposal.status.accept_milli if arrival.proposal is not None else None
        seen.append((milli, accepted / arrival.m))
    last = await ctx.take(session, "round 13")
    values = [milli for milli, _ in seen] + [last.proposal.status.accept_milli if last.proposal else None]
    if all(value is None for value in values):
        ctx.note("no proposal carried accept_milli (it is optional)")
        return
    for index, (milli, ratio) in enumerate(seen):
        after = values[index + 1]
        if milli is None or after is None:
            continue
        target = 1000 * ratio
        ctx.check(abs(after - target) <= abs(milli - target) + 1, f"after a verdict with a/M = {ratio:.2f} "
                  f"accept_milli went from {milli} to {after}, away from {target:.0f}",
                  expected=f"towards {target:.0f}", actual=f"{milli} -> {after}")
    start, middle, end = values[0], values[6], values[-1]
    if None not in (start, middle, end):
        assert start is not None and middle is not None and end is not None
        ctx.check(middle > start or start >= 990, f"six verdicts accepting everything left accept_milli at {middle} "
                  f"(from {start})", expected="higher", actual=str(middle))
        ctx.check(end < middle or middle <= 10, f"six verdicts accepting nothing left accept_milli at {end} (from "
                  f"{middle})", expected="lower", actual=str(end))
