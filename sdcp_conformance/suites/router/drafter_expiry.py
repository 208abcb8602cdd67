"""Drafters whose status expires (§6.1, §6.9 Drafter failure, P1-RTR-2): never assigned, replaced mid-session by
a live permitted drafter that starts from the committed prefix."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import ELIGIBLE, NOT_EXPIRED, assignments_to, quiet, switch


@router_case("RTR-6.1-EXPIRED-003", area="drafter-expiry", section="6.1, P1-RTR-2", quote=f"{NOT_EXPIRED} ... "
             f"{ELIGIBLE}", level=Level.MUST_NOT, profile=("P1-RTR-2",), requires=("drafters:3",),
             rows=("R-6.1-NOT-EXPIRED", "P1-RTR-2/ELIGIBLE"))
async def never_assign_an_expired_drafter(ctx: RouterContext) -> None:
    """drafter-1's status expired, though it looks the best: sessions and switches go to the others."""
    for name in ("drafter-2", "drafter-3"):
        ctx.drafters[name].status.load = 90
        await ctx.drafters[name].status.report(recorded=False)
    await ctx.expire(ctx.drafters["drafter-1"])
    session = await ctx.open_ok()
    await switch(ctx, session)
    wrong = assignments_to(ctx, session, {"drafter-1"})
    ctx.check(not wrong, "drafter-1 was assigned after its status had expired", expected="drafter-2 or drafter-3",
              actual=f"{len(wrong)} assignment(s) to drafter-1")


@router_case("RTR-6.1-EXPIRED-004", area="drafter-expiry", section="6.1, P1-RTR-2", quote=f"{NOT_EXPIRED} ... "
             f"{ELIGIBLE}", level=Level.MUST_NOT, profile=("P1-RTR-2", "P1-FRONT-1"),
             rows=("R-6.1-NOT-EXPIRED", "P1-RTR-2/ELIGIBLE", "R-6.1-PERMITTED"))
async def no_drafter_while_every_permitted_one_expired(ctx: RouterContext) -> None:
    """Only drafter-2's model is permitted and drafter-2 expired: no assignment until it reports again, then one
    (or the session ended: D-JUDGE-R12)."""
    await ctx.expire(ctx.drafters["drafter-2"])
    front, answer = await ctx.open(ctx.contract(drafters=("drafter-2",)))
    if front is None or not answer.ok:
        ctx.note(f"the front did not open the session with no eligible drafter: {answer.describe()}")
        return
    await quiet(ctx, 0.5)
    early = assignments_to(ctx, front, {"drafter-2"})
    ctx.check(not early, "drafter-2 was assigned while its status was expired", expected="no assignment",
              actual=f"{len(early)} assignment(s)")
    mark = ctx.history.mark()
    await ctx.drafters["drafter-2"].revive()
    if await ctx.assigned(front, since=mark) is None:
        # D-JUDGE-R12: no text says what a router does with a session it opened while no permitted drafter was
        # live: waiting for one, or ending the session. A session left neither assigned once one reports nor
        # ended waits for an event that cannot come (no drafter, no proposal, no verdict) and is judged.
        _, last = await ctx.read_front(front, final=True, timeout_s=ctx.act_s)
        ended = last is not None and last.final
        ctx.check(ended, f"the router neither assigned a drafter within {ctx.act_s:.0f} s of drafter-2's status "
                  "report (the only permitted drafter, live again) nor ended the session", row="R-6.1-PERMITTED",
                  expected="an assignment to drafter-2", actual="no assignment, no final output")
        if ended:
            ctx.note("with no permitted drafter live the router ended the session instead of waiting for one "
                     f"(finish {last.finish if last else None}): no text decides")


@router_case("RTR-6.9-DRAFTER-001", area="drafter-expiry", section="6.9, 6.1",
             level=Level.MUST, profile=("P1-RTR-3",),
             rows=("R-6.9-DRAFTER-FAILURE", "R-6.1-ASSIGN-ORDER", "R-5.2-COMMITTED-TOKENS", "P1-RTR-3/ALWAYS-TOKENS",
                   "P1-RTR-3/ASSIGNMENT-STATE", "R-6.1-NOT-EXPIRED"))
async def expired_drafter_is_replaced(ctx: RouterContext) -> None:
    """The assigned drafter dies mid-session: another live drafter gets the session from the committed prefix."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 3) + ctx.commit(session, 1)
    dead = ctx.drafter_of(session)
    assert dead is not None
    mark = ctx.history.mark()
    await dead.die()
    replaced = await ctx.assigned(session, since=mark)
    ctx.require(replaced is not None, f"no drafter replaced the dead {dead.name} within {ctx.act_s:.0f} s",
                row="R-6.9-DRAFTER-FAILURE", expected="a new assignment", actual="none")
    assert replaced is not None and replaced.assignment is not None
    ctx.check(replaced.drafter != dead.name, f"the dead {dead.name} was assigned again", row="R-6.1-NOT-EXPIRED",
              expected="another drafter", actual=replaced.drafter)
    # The prefix is in the assignment as committed and digest (checked on every assignment against the log);
    # the token list besides is P1-RTR-3's, and its content §5.2's.
    ctx.check(replaced.assignment.committed == len(committed), "the new drafter does not start from the committed "
              "prefix", row="R-6.9-DRAFTER-FAILURE", expected=f"committed {len(committed)}",
              actual=f"committed {replaced.assignment.committed}")
    if replaced.assignment.committed_tokens is None:
        ctx.deviate("P1-RTR-3/ALWAYS-TOKENS", "the new drafter's assignment has no committed_tokens",
                    expected=[str(committed)], actual="absent")
    else:
        ctx.check(replaced.tokens_object == tuple(committed), "the new drafter's committed_tokens is not the "
                  "committed prefix", row="R-5.2-COMMITTED-TOKENS", expected=str(committed),
                  actual=str(replaced.tokens_object))
