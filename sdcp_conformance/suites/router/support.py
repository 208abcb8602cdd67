"""What several router cases share: quotes, and the small conversations they are built from."""

from __future__ import annotations

from sdcp_conformance.cache.commit_log import highest_fence
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.played_verifier import PlayedVerifier
from sdcp_conformance.harness.roles.router_history import AssignSeen, OpenSeen, PutSeen
from sdcp_conformance.harness.roles.router_truth import FrontSession

NOT_EXPIRED = "The router MUST NOT assign sessions to an instance whose status has expired."
ELIGIBLE = ("Only instances whose latest status is unexpired are eligible — for opening sessions at verifiers as well "
            "as for assigning drafters.")
ORDER = ("It first informs the verifier with PUT sessions/{id}/drafter, and then sends the assignment, carrying the "
         "current round, committed length, and digest, to the drafter.")
FENCE_FIRST = ("Verifier failure: the router first appends a fence record with the new epoch to the commit_log, so "
               "that the old verifier, even if it is only partitioned, can no longer commit or release output;")
RESUME = ('it then reads the last commit record and opens the session at a new verifier with that epoch and the '
          '"resume" member carrying that round, committed length, digest')
REASSIGN = "It then informs the verifier of the drafter and sends a new assignment."
OLD_EPOCH = ("Proposals carrying an older epoch are rejected, and front ends discard output carrying an older epoch, "
             "so a recovered old verifier cannot extend the session.")


async def switch(ctx: RouterContext, front: FrontSession, verifier: PlayedVerifier | None = None) -> AssignSeen | None:
    """The serving verifier applies switch (§6.5.2): it drops the drafter and tells the router; the next assignment."""
    played = verifier or ctx.serving(front)
    served = played.serving(front.id)
    if served is not None:
        served.drafter = None
    mark = ctx.history.mark()
    answer = await played.send_event(front.id, 2)
    ctx.check(answer.ok, f"the switch event {answer.refused()}", row="R-5.1-RESOURCES",
              expected="204", actual=answer.describe())
    return await ctx.assigned(front, since=mark)


async def quiet(ctx: RouterContext, seconds: float) -> None:
    """Give a router time to do what it must not do (the only way to see that it did not)."""
    await ctx.history.wait_for(lambda: False, seconds)


def opens_at(ctx: RouterContext, front: FrontSession, names: set[str], *, since: int = 0) -> list[OpenSeen]:
    return [seen for seen in ctx.history.of(OpenSeen, front.id, since=since) if seen.verifier in names]


def assignments_to(ctx: RouterContext, front: FrontSession, names: set[str], *, since: int = 0) -> list[AssignSeen]:
    return [seen for seen in ctx.history.of(AssignSeen, front.id, since=since) if seen.drafter in names]


def puts_naming(ctx: RouterContext, front: FrontSession, uris: set[str], *, since: int = 0) -> list[PutSeen]:
    return [seen for seen in ctx.history.of(PutSeen, front.id, since=since)
            if seen.assignment is not None and seen.assignment.drafter in uris]


async def failover(ctx: RouterContext, front: FrontSession, how: str = "expire", *,
                   row: str = "P1-RTR-5/FAILED-VERIFIER") -> tuple[OpenSeen, AssignSeen]:
    """Fail the serving verifier; the router must resume the session elsewhere and assign a drafter there.

    ``row`` is what a missing failover breaks: P1-RTR-5 whether the verifier's status expired or its resources
    failed — "failing a session over from a verifier whose status expired is this profile's rule (judged as a
    profile item)"; how the failover is then done (fence first, resume, reassign) is §6.9's, at MUST. A router that
    appended the new epoch's fence has taken the verifier for failed: not opening the session elsewhere after it is
    §6.9's "it then reads the last commit record and opens the session at a new verifier" (R-6.9-ROUTER-RESUME)."""
    epoch = ctx.epoch(front)
    await ctx.fail_verifier(ctx.serving(front), how)
    opened = await ctx.resumed(front, epoch=epoch + 1)
    if opened is None:
        fence = highest_fence(ctx.log(front))
        begun = fence is not None and fence.epoch > epoch
        ctx.fail(f"the router did not open the session at another verifier within {ctx.act_s:.0f} s of its verifier "
                 f"failing ({how})" + (f", although it appended the fence of epoch {fence.epoch}" if fence and begun
                                       else ""),
                 row=ctx.helper_row("R-6.9-ROUTER-RESUME" if begun else row))
    assert opened is not None and opened.opening is not None
    assigned = await ctx.assigned(front, since=opened.seq, epoch=opened.opening.epoch)
    ctx.require(assigned is not None, "after the failover no drafter was assigned at the new epoch",
                row=ctx.helper_row("R-6.9-REASSIGN"))
    assert assigned is not None
    return opened, assigned


__all__ = ["ELIGIBLE", "FENCE_FIRST", "NOT_EXPIRED", "OLD_EPOCH", "ORDER", "REASSIGN", "RESUME",
           "assignments_to", "failover", "opens_at", "puts_naming", "quiet", "switch"]
