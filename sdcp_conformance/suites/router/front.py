"""The router as front end (§6.7, P1-FRONT-2): stable indices across retries and failovers, a long poll that
waits like the verifier's, the session's description, a final output with its finish."""

from __future__ import annotations

import asyncio

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import failover

DESCRIBE = "`GET client/sessions/{id}` answers `{verifier, epoch, phase}`."


@router_case("RTR-6.7-FRONT-001", area="front", section="6.7, P1-FRONT-2", level=Level.MUST,
             profile=("P1-FRONT-2",), rows=("R-6.7-FRONT-END", "P1-FRONT-2/OUTPUT"))
async def retries_see_the_same_indices(ctx: RouterContext) -> None:
    """Reading again from 0, and from the middle, gives the same tokens at the same indices."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2) + ctx.commit(session, 3) + ctx.commit(session, 1)
    first, _ = await ctx.read_front(session, count=6)
    again, _ = await ctx.read_front(session, count=6)
    middle, _ = await ctx.read_front(session, count=3, start=3)
    ctx.check(first == again == committed and middle == committed[3:], "reading again did not give the same "
              "tokens at the same indices", expected=str(committed), actual=f"{first} / {again} / 3: {middle}")


@router_case("RTR-6.7-FRONT-002", area="front", section="P1-FRONT-2, P1-OUT-1",
             level=Level.PROFILE, profile=("P1-FRONT-2", "P1-OUT-1"), rows=("P1-FRONT-2/OUTPUT",))
async def a_read_waits_for_tokens(ctx: RouterContext) -> None:
    """A read from the committed length waits; tokens committed meanwhile come back in its answer."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    await ctx.read_front(session, count=2)
    served = ctx.serving(session).serving(session.id)
    assert served is not None
    served.polled.clear()
    read = asyncio.ensure_future(ctx.front.output(session.id, 2))
    waiting: bool = True
    try:
        await asyncio.wait_for(asyncio.shield(served.polled.wait()), ctx.act_s)
    except TimeoutError:
        waiting = False
    more = ctx.commit(session, 3)
    answer, output = await read
    ctx.check(bool(waiting) and output is not None and list(output.tokens) == more,
              "a read waiting at the front did not return the tokens committed while it waited",
              expected=f"{more} (after {committed})", actual=answer.describe() if output is None
              else str(list(output.tokens)))


@router_case("RTR-6.7-FRONT-003", area="front", section="6.7, 6.9", level=Level.MUST,
             profile=("P1-FRONT-2",), rows=("R-6.7-FRONT-END", "P1-FRONT-2/OUTPUT", "R-6.9-ROUTER-RESUME",
                                            "R-6.9-REASSIGN", "P1-RTR-5/FAILED-VERIFIER"))
async def indices_stable_across_a_failover(ctx: RouterContext) -> None:
    """Read, fail over, read again from 0: the resumed verifier's output has the same tokens at the same indices,
    then the rest, then the final output with finish 4."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 3) + ctx.commit(session, 2)
    before, _ = await ctx.read_front(session, count=3)
    await failover(ctx, session)
    more = ctx.commit(session, 2)
    after, _ = await ctx.read_front(session, count=7)
    ctx.check(before == committed[:len(before)] and after == committed + more, "the output across the failover changed "
              "at indices already read, or lost or repeated tokens", expected=str(committed + more),
              actual=f"{before} then {after}")
    ctx.serving(session).end(session.id, 4)
    await ctx.serving(session).send_event(session.id, 4)
    tail, last = await ctx.read_front(session, final=True, start=7)
    ctx.check(last is not None and last.final and last.finish is not None and int(last.finish) == 4 and not tail,
              "the output did not end with final: true and finish 4 after the last token", row="P1-FRONT-2/OUTPUT",
              expected="final, finish 4", actual=str(last.to_obj() if last else None))


@router_case("RTR-P1-FRONT-2-DESCRIBE-001", area="front", section="P1-FRONT-2", level=Level.PROFILE,
             profile=("P1-FRONT-2",), rows=("P1-FRONT-2/DESCRIBE", "R-6.9-ROUTER-RESUME", "R-6.9-REASSIGN",
                                            "P1-RTR-5/FAILED-VERIFIER"))
async def the_session_is_described(ctx: RouterContext) -> None:
    """The description names the serving verifier and the epoch, before and after a failover."""
    session = await ctx.open_ok()
    for epoch in (1, 2):
        answer = await ctx.front.describe(session.id)
        body = decode(answer.body) if answer.ok else None
        serving = ctx.serving(session)
        ctx.check(answer.status == 200 and isinstance(body, dict) and body.get("verifier") == serving.uri
                  and body.get("epoch") == epoch and isinstance(body.get("phase"), str),
                  f"GET client/sessions/{{id}} answered {answer.describe()} {body!r}",
                  expected=f"200 {{verifier: {serving.uri}, epoch: {epoch}, phase}}", actual=str(body))
        if epoch == 1:
            await failover(ctx, session)
