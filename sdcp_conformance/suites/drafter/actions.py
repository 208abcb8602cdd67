"""What each verdict action means to the drafter (§6.5.2, §5.2, P1-DRF-9).

continue and reduce: it proceeds (with the new m_cap). switch: "the current
drafter MUST stop proposing for the session". self_decode, finish and fail:
the session is not the drafter's any more. An unknown action value is
"fail" (§5.2) and stops it (P1-DRF-9). "Stops" is judged over a quiet
window: four times the slowest verdict-to-proposal time this certification
has seen, at least 0.6 s (D-JUDGE-D5); a proposal inside it is refused as a
verifier would (403 after switch or self_decode, 410 after finish or fail).
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import STOP_ROWS, DrafterContext
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.suites.drafter import CATALOGUE

SWITCH = ("switch (2):: The verifier sends an event to the router, which assigns the session to another drafter with "
          "a permitted model; the current drafter MUST stop proposing for the session.")
SELF = ("self_decode (3):: The verifier decodes the session itself with the target model. ... After `switch` or the "
        "start of self-decoding, the old drafter's proposals get 403 `sdcp-not-assigned` until a new assignment "
        "arrives.")
UNKNOWN = 'A receiver that encounters an unknown action value MUST treat it as "fail".'


async def _stops_after(ctx: DrafterContext, action: int, row: str) -> None:
    session = await ctx.start(rule=1)
    await ctx.decide(session, "round 1")
    _, verdict = await ctx.decide(session, "round 2", action=action)
    name = Action(action).name.lower() if action in {int(a) for a in Action} else f"unknown ({action})"
    ctx.require(session.stopped is not None, f"harness error: verdict {verdict.round} did not stop the session",
                row=row)
    await ctx.quiet(session, row, f"the verdict of round {verdict.round} with action {name}")


@CATALOGUE.case("DRF-6.5.2-SWITCH-001", area="actions", section="6.5.2", quote=SWITCH, level=Level.MUST,
                rows=("R-6.5.2-STOP-ON-SWITCH",))
async def switch_stops(ctx: DrafterContext) -> None:
    """After a verdict with action switch the drafter sends no further proposal for the session."""
    await _stops_after(ctx, int(Action.SWITCH), STOP_ROWS[int(Action.SWITCH)])


@CATALOGUE.case("DRF-6.5.2-SWITCH-002", area="actions", section="6.5.2, 6.9, P1-DRF-7",
                quote=f"{SWITCH} ... an equal or higher epoch replaces the current assignment, abandoning any "
                      "outstanding proposal first.",
                level=Level.MUST, profile=("P1-DRF-7", "P1-RTR-5"),
                rows=("R-6.5.2-STOP-ON-SWITCH", "P1-DRF-7/REPLACE"))
async def reassigned_after_switch(ctx: DrafterContext) -> None:
    """After switch the drafter stops; a new assignment of the same session to it (P1-RTR-5) restarts it."""
    session = await ctx.start(rule=1)
    await ctx.decide(session, "round 1", action=Action.SWITCH)
    await ctx.quiet(session, "R-6.5.2-STOP-ON-SWITCH", "the verdict with action switch")
    await ctx.reassign_ok(session, m_init=3)
    arrival, _ = await ctx.decide(session, "the first proposal of the new assignment", row="P1-DRF-7/REPLACE")
    await ctx.decide(session, "the next round")
    ctx.note(f"drafting resumed with {arrival.describe()}")


@CATALOGUE.case("DRF-6.5.2-SELF-DECODE-001", area="actions", section="6.5.2, P1-EVT-1", level=Level.MUST,
                rows=("R-6.5.2-STOP-ON-SELF-DECODE",))
async def self_decode_stops(ctx: DrafterContext) -> None:
    """After a verdict with action self_decode the drafter sends no further proposal for the session."""
    await _stops_after(ctx, int(Action.SELF_DECODE), STOP_ROWS[int(Action.SELF_DECODE)])


@CATALOGUE.case("DRF-6.5.2-FINISH-001", area="actions", section="6.5.2", level=Level.MUST,
                rows=("R-6.5.2-STOP-ON-END",))
async def finish_stops(ctx: DrafterContext) -> None:
    """After a verdict with action finish the drafter sends no further proposal for the session."""
    await _stops_after(ctx, int(Action.FINISH), "R-6.5.2-STOP-ON-END")


@CATALOGUE.case("DRF-6.5.2-FINISH-002", area="actions", section="6.5.2, 6.3", level=Level.MUST,
                rows=("R-6.5.2-STOP-ON-END",))
async def max_new_reached(ctx: DrafterContext) -> None:
    """max_new 5: the round that reaches it is truncated and finishes; no proposal follows."""
    session = await ctx.start(rule=1, contract=ctx.contract(max_new=5), m_init=3)
    for number in range(1, 6):
        _, verdict = await ctx.decide(session, f"round {number}")
        if int(verdict.action) == int(Action.FINISH):
            break
    ctx.require(session.stopped is not None, "harness error: max_new was not reached", row="R-6.5.2-STOP-ON-END")
    await ctx.quiet(session, "R-6.5.2-STOP-ON-END", "the verdict that reached max_new (action finish)")


@CATALOGUE.case("DRF-6.5.2-FAIL-001", area="actions", section="6.5.2", level=Level.MUST,
                rows=("R-6.5.2-STOP-ON-END",))
async def fail_stops(ctx: DrafterContext) -> None:
    """After a verdict with action fail the drafter sends no further proposal for the session."""
    await _stops_after(ctx, int(Action.FAIL), "R-6.5.2-STOP-ON-END")


@CATALOGUE.case("DRF-5.2-UNKNOWN-ACTION-001", area="actions", section="5.2, P1-DRF-9",
                quote=f"{UNKNOWN} ... An unknown action in a verdict stops the drafter", level=Level.MUST,
                rows=("R-5.2-UNKNOWN-ACTION", "P1-DRF-9"))
async def unknown_action_stops(ctx: DrafterContext) -> None:
    """A verdict with action 9 (no such action) is a fail: the drafter stops proposing for the session."""
    session = await ctx.start(rule=1)
    await ctx.decide(session, "round 1")
    await ctx.decide(session, "round 2", action=9)
    await ctx.quiet(session, "R-5.2-UNKNOWN-ACTION", "a verdict with the unknown action 9")


@CATALOGUE.case("DRF-6.5.2-CONTINUE-001", area="actions", section="6.5.2",
                quote="continue (0):: The drafter proceeds with the next round. ... reduce (1):: The verifier sets "
                      "m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds.",
                level=Level.MUST, rows=("R-6.5.2-REDUCE-PROCEEDS",))
async def continue_and_reduce_proceed(ctx: DrafterContext) -> None:
    """After continue and after reduce (m_cap 4, 2, 1) the drafter proposes the next round within the new cap."""
    session = await ctx.start(rule=1, m_init=8)
    await ctx.decide(session, "round 1", m_cap=8)
    for m_cap in (4, 2, 1):
        await ctx.decide(session, f"the round before reduce to {m_cap}", action=Action.REDUCE, m_cap=m_cap,
                         accepted=0)
    arrival = await ctx.take(session, "the round after reduce to 1", row="R-6.5.2-REDUCE-PROCEEDS")
    ctx.check(arrival.m == 1, f"M = {arrival.m} after m_cap 1", row="R-6.5.2-REDUCE-PROCEEDS", expected="1",
              actual=str(arrival.m))
