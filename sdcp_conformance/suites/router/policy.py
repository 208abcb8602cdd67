"""Sampling policy updates (§6.6, P1-RTR-4, P1-FRONT-3): from_round after the current round, the retry after
409, the new profile in every later assignment, the contract unchanged."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.router_history import PolicySeen
from sdcp_conformance.harness.roles.router_truth import FrontSession
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import failover, switch

FROM_ROUND = "It sends a policy message with from_round greater than the current round."
PROFILE_ROUND = "Policy: `from_round` = the highest round the router knows + 1"
RETRY = "on 409 it retries with `state.round + 1`."
FRONT_POLICY = ("`POST client/sessions/{id}/policy` with `{sampling}` makes the router send a policy (§6.6, P1-RTR-4) "
                "and answers 200 `{from_round}` once the verifier accepted it.")
LATER = ('the router includes it in the "sampling" member of subsequent assignments; the contract in those '
         "assignments is unchanged.")
SAMPLING = {"temperature_milli": 600, "top_k": 7, "seed": 11}
REPLACING = {"temperature_milli": 900, "top_p_milli": 900}
"""A second preference sharing no member with :data:`SAMPLING` but the temperature: a router that merges it into
the first (P1-POL-1: a policy replaces the whole profile) carries top_k and seed on (found by a planted bug in an
independent router)."""


async def _policy(ctx: RouterContext, session: FrontSession, expected_from: int,
                  sampling: dict[str, int] = SAMPLING) -> None:
    """State a preference at the front; it answers the accepted from_round once the verifier accepted it."""
    answer = await ctx.front.policy(session.id, sampling)
    accepted = [seen for seen in ctx.history.of(PolicySeen, session.id) if seen.accepted]
    body = decode(answer.body) if answer.ok else None
    ctx.check(answer.status == 200 and isinstance(body, dict) and body.get("from_round") == expected_from
              and bool(accepted), f"the front's policy answer is {answer.describe()} {body!r}", row="P1-FRONT-3",
              expected=f"200 {{from_round: {expected_from}}} after the verifier accepted it",
              actual=f"{answer.describe()} {body!r}")


@router_case("RTR-6.6-POLICY-001", area="policy", section="6.6, P1-RTR-4, P1-FRONT-3",
             quote=f"{FROM_ROUND} ... {PROFILE_ROUND}", level=Level.MUST, profile=("P1-RTR-4", "P1-FRONT-3"),
             rows=("R-6.6-FROM-ROUND", "P1-RTR-4/FROM-ROUND", "P1-FRONT-3"))
async def from_round_after_the_known_round(ctx: RouterContext) -> None:
    """The router knows round 2 (from the PUT after a switch): the policy starts at round 3."""
    session = await ctx.open_ok()
    ctx.commit(session, 1)
    ctx.commit(session, 1)
    await switch(ctx, session)  # the PUT …/drafter teaches the router round 2
    await _policy(ctx, session, 3)
    sent = [seen.policy.from_round for seen in ctx.history.of(PolicySeen, session.id) if seen.policy]
    ctx.check(sent[:1] == [3], f"the policy's from_round is {sent[:1]}", row="P1-RTR-4/FROM-ROUND",
              expected="[3]", actual=str(sent[:1]))


@router_case("RTR-6.6-POLICY-002", area="policy", section="P1-RTR-4, 6.6, P1-FRONT-3",
             level=Level.PROFILE, profile=("P1-RTR-4", "P1-POL-1", "P1-FRONT-3"),
             rows=("P1-RTR-4/RETRY", "P1-FRONT-3", "R-6.6-FROM-ROUND"))
async def retried_after_409(ctx: RouterContext) -> None:
    """The verifier moved on to round 3 unbeknown to the router: the 409's state makes it retry with from_round 4."""
    session = await ctx.open_ok()
    for _ in range(3):
        ctx.commit(session, 1)
    answer = await ctx.front.policy(session.id, SAMPLING)
    sent = [(seen.policy.from_round, seen.status) for seen in ctx.history.of(PolicySeen, session.id) if seen.policy]
    ctx.check(bool(sent) and sent[-1] == (4, 200), f"the policies the verifier received: {sent}",
              expected="…, then from_round 4 accepted", actual=str(sent))
    body = decode(answer.body) if answer.ok else None
    ctx.check(answer.status == 200 and isinstance(body, dict) and body.get("from_round") == 4,
              f"the front answered {answer.describe()} {body!r}", row="P1-FRONT-3", expected="200 {from_round: 4}",
              actual=f"{answer.describe()} {body!r}")


@router_case("RTR-6.6-POLICY-003", area="policy", section="6.6, 4.1", level=Level.MUST,
             profile=("P1-RTR-4",), rows=("R-6.6-LATER-ASSIGNMENTS", "R-4.1-CONTRACT-UNCHANGED", "P1-FRONT-3"))
async def later_assignments_carry_the_profile(ctx: RouterContext) -> None:
    """After two policies, a switch and a drafter's death both lead to assignments with the latest one's sampling
    (the whole of it, nothing of the first), under the unchanged contract."""
    session = await ctx.open_ok()
    ctx.commit(session, 2)
    await switch(ctx, session)
    await _policy(ctx, session, 2)
    await _policy(ctx, session, 2, REPLACING)
    mark = ctx.history.mark()
    assigned = await switch(ctx, session)
    drafter = ctx.drafter_of(session)
    if drafter is not None:
        await drafter.die()
        await ctx.assigned(session, since=ctx.history.mark())
    later = ctx.assignments(session, since=mark)
    ctx.check(assigned is not None and all(seen.assignment is not None and seen.assignment.sampling is not None
                                           and seen.assignment.sampling.to_obj() == REPLACING for seen in later),
              "an assignment after the accepted policies does not carry the latest one's sampling profile (and "
              "nothing else)", row="R-6.6-LATER-ASSIGNMENTS", expected=str(REPLACING),
              actual=str([seen.assignment.sampling.to_obj() if seen.assignment and seen.assignment.sampling
                          else None for seen in later]))


@router_case("RTR-6.6-POLICY-004", area="policy", section="6.6, 6.9", level=Level.MUST,
             profile=("P1-RTR-4",),
             rows=("R-6.6-LATER-ASSIGNMENTS", "R-6.9-ROUTER-RESUME", "R-6.9-REASSIGN", "P1-FRONT-3",
                   "P1-RTR-5/FAILED-VERIFIER"))
async def profile_survives_a_failover(ctx: RouterContext) -> None:
    """The assignment at the new verifier after a failover still carries the accepted sampling profile."""
    session = await ctx.open_ok()
    ctx.commit(session, 2)
    await switch(ctx, session)
    await _policy(ctx, session, 2)
    _, assigned = await failover(ctx, session)
    sampling = assigned.assignment.sampling if assigned.assignment else None
    ctx.check(sampling is not None and sampling.to_obj() == SAMPLING, "the assignment after the failover lost the "
              "accepted sampling profile", row="R-6.6-LATER-ASSIGNMENTS", expected=str(SAMPLING),
              actual=str(sampling.to_obj() if sampling else None))
