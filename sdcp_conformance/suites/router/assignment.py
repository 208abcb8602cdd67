"""Assigning a drafter (§6.1, §5.2, P1-RTR-3, P1-DRF-2): the verifier is told first, the assignment carries what
that PUT returned, the contract, the URIs and the prompt, m_init within 1..m_max, and committed_tokens once
anything is committed; only drafters whose model the contract permits."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import ORDER, assignments_to, switch

ASSIGNMENT_STATE = ("the assignment sent to the drafter carries the values of the session-state that PUT returned. "
                    "... The router learns the current round from the session-state returned by `PUT …/drafter`.")
PERMITTED = "The router then selects a drafter whose model is permitted by the contract."
ABSENT = 'An absent "drafters" member permits any draft model that the router\'s local policy allows.'
SELECTION = ("Drafter selection is a local policy based on the drafters' status reports, for example preferring "
             "drafters with low load and queue and high recent acceptance.")
ORDER_ROWS = ("R-6.1-ASSIGN-ORDER", "P1-RTR-3/ASSIGNMENT-STATE", "R-5.2-ASSIGNMENT", "R-4.1-CONTRACT-UNCHANGED",
              "P1-DRF-2/ROUTER-M-INIT")


@router_case("RTR-6.1-ASSIGN-001", area="assignment", section="6.1, 5.2, P1-RTR-3", quote=f"{ORDER} ... "
             f"{ASSIGNMENT_STATE}", level=Level.MUST, profile=("P1-RTR-3", "P1-EVT-1"), rows=ORDER_ROWS)
async def verifier_first_then_the_state_it_returned(ctx: RouterContext) -> None:
    """PUT …/drafter precedes every assignment, and a reassignment carries the round the PUT returned, which
    the router could not have known otherwise (the verifier moved on without telling it)."""
    session = await ctx.open_ok()
    for _ in range(3):
        ctx.commit(session, 1)  # three rounds the router hears nothing about
    assigned = await switch(ctx, session)
    ctx.require(assigned is not None, "the switch event was not followed by an assignment", row="R-6.1-ASSIGN-ORDER")
    assert assigned is not None and assigned.assignment is not None
    ctx.check(assigned.assignment.round == 3, f"the reassignment carries round {assigned.assignment.round}; the "
              "PUT …/drafter returned round 3", row="P1-RTR-3/ASSIGNMENT-STATE", expected="3",
              actual=str(assigned.assignment.round))


@router_case("RTR-6.1-ASSIGN-002", area="assignment", section="P1-DRF-2", level=Level.PROFILE,
             profile=("P1-DRF-2",), rows=("P1-DRF-2/ROUTER-M-INIT",))
async def m_init_is_clamped_to_m_max(ctx: RouterContext) -> None:
    """With m_max 1 and then 2, every assignment's m_init lies in 1..m_max."""
    for m_max in (1, 2):
        session = await ctx.open_ok(ctx.contract(m_max=m_max))
        assigned = ctx.assignments(session)[0].assignment
        assert assigned is not None
        ctx.check(1 <= assigned.m_init <= m_max, f"m_init {assigned.m_init} with m_max {m_max}",
                  expected=f"1..{m_max}", actual=str(assigned.m_init))


@router_case("RTR-6.1-ASSIGN-003", area="assignment", section="P1-RTR-3, 5.2, P1-MLC-2",
             level=Level.PROFILE, profile=("P1-RTR-3", "P1-MLC-2"),
             rows=("P1-RTR-3/ALWAYS-TOKENS", "R-5.2-COMMITTED-TOKENS", "R-6.1-ASSIGN-ORDER"))
async def committed_tokens_once_anything_is_committed(ctx: RouterContext) -> None:
    """After two rounds a reassignment carries committed_tokens: the committed output so far, as a token list;
    after one more round, the next reassignment's is the longer output (not the object written the first time,
    which a router reusing its cached reference would send: found by a planted bug in an independent router)."""
    session = await ctx.open_ok()
    committed: list[int] = []
    for rounds in ((3, 2), (2,)):
        for count in rounds:
            committed += ctx.commit(session, count)
        assigned = await switch(ctx, session)
        ctx.require(assigned is not None and assigned.assignment is not None, "no reassignment after the switch",
                    row="R-6.1-ASSIGN-ORDER")
        assert assigned is not None and assigned.assignment is not None
        if assigned.assignment.committed_tokens is None:  # P1-RTR-3 alone requires it (§5.2: "? committed_tokens")
            ctx.deviate("P1-RTR-3/ALWAYS-TOKENS", f"the reassignment after {len(committed)} committed tokens has no "
                        "committed_tokens", expected=[str(committed)], actual="absent")
            return
        ctx.check(assigned.tokens_object == tuple(committed), f"the reassignment's committed_tokens is not the "
                  f"committed output ({len(committed)} tokens)", row="R-5.2-COMMITTED-TOKENS",
                  expected=str(committed), actual=str(assigned.tokens_object))


@router_case("RTR-6.1-PERMITTED-001", area="assignment", section="6.1, 4.1", quote=PERMITTED, level=Level.MUST,
             requires=("drafters:3",), rows=("R-6.1-PERMITTED",))
async def only_a_permitted_drafter(ctx: RouterContext) -> None:
    """A contract permitting only drafter-2's model gets drafter-2, however busy it looks beside the others."""
    ctx.drafters["drafter-2"].status.load = 95
    ctx.drafters["drafter-2"].status.queue = 30
    await ctx.drafters["drafter-2"].status.report(recorded=False)
    for _ in range(2):
        session = await ctx.open_ok(ctx.contract(drafters=("drafter-2",)))
        await switch(ctx, session)
        wrong = assignments_to(ctx, session, {"drafter-1", "drafter-3"})
        ctx.check(not wrong, "a drafter whose model the contract does not permit was assigned",
                  expected="drafter-2 only", actual=str(sorted({seen.drafter for seen in wrong})))


@router_case("RTR-6.1-PERMITTED-002", area="assignment", section="6.1, 6.5.2", quote=PERMITTED, level=Level.MUST,
             requires=("drafters:3",), rows=("R-6.1-PERMITTED", "R-6.5.2-ROUTER-SWITCH"))
async def switching_stays_within_the_permitted(ctx: RouterContext) -> None:
    """A contract permitting the near model only: switches move between drafter-1 and drafter-3, never to the
    idle drafter-2."""
    for name in ("drafter-1", "drafter-3"):
        ctx.drafters[name].status.load = 80
        await ctx.drafters[name].status.report(recorded=False)
    session = await ctx.open_ok(ctx.contract(drafters=("drafter-1",)))
    for _ in range(3):
        await switch(ctx, session)
    wrong = assignments_to(ctx, session, {"drafter-2"})
    ctx.check(not wrong, "drafter-2, whose model the contract does not permit, was assigned",
              expected="drafter-1 or drafter-3", actual=f"{len(wrong)} assignment(s) to drafter-2")


@router_case("RTR-5.2-ASSIGNMENT-001", area="assignment", section="5.2, 6.1", level=Level.MUST,
             rows=("R-5.2-ASSIGNMENT", "R-4.1-CONTRACT-UNCHANGED", "R-6.1-ASSIGN-ORDER"))
async def assignment_members(ctx: RouterContext) -> None:
    """The assignment names the verifier's and the drafter's base URIs exactly, the prompt, the contract."""
    session = await ctx.open_ok(prompt=(3, 1, 4, 1, 5, 9, 2, 6))
    ctx.commit(session, 2)
    await switch(ctx, session)


@router_case("RTR-4.1-ABSENT-DRAFTERS-001", area="assignment", section="4.1", level=Level.MAY,
             rows=("R-4.1-ABSENT-DRAFTERS",))
async def absent_drafters_member(ctx: RouterContext) -> None:
    """A contract without `drafters` permits any configured drafter: the session gets one."""
    front, answer = await ctx.open(ctx.contract(drafters=None))
    if front is None or not answer.ok:
        ctx.informational(f"a contract without drafters was not served: {answer.describe()}",
                          row="R-4.1-ABSENT-DRAFTERS")
        return
    if await ctx.assigned(front) is None:
        ctx.informational("no drafter was assigned for a contract without drafters", row="R-4.1-ABSENT-DRAFTERS")


@router_case("RTR-6.1-SELECTION-001", area="assignment", section="6.1", level=Level.MAY,
             requires=("drafters:3",), rows=("R-6.1-SELECTION",))
async def prefers_the_least_loaded(ctx: RouterContext) -> None:
    """Of two permitted drafters, one idle and one loaded with a long queue, the idle one is preferred."""
    loaded = ctx.drafters["drafter-1"].status
    loaded.load, loaded.queue, loaded.accept_milli = 95, 20, 100
    await loaded.report(recorded=False)
    ctx.drafters["drafter-3"].status.accept_milli = 900
    await ctx.drafters["drafter-3"].status.report(recorded=False)
    session = await ctx.open_ok(ctx.contract(drafters=("drafter-1",)))
    first = ctx.assignments(session)[0]
    if first.drafter != "drafter-3":
        ctx.informational(f"the router chose {first.drafter} (load 95, queue 20) over the idle drafter-3",
                          row="R-6.1-SELECTION")
