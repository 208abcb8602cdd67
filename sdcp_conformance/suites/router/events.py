"""Events (§6.5.2, §5.2, P1-EVT-1, P1-RTR-2, P1-RTR-5, P1-DRF-9): switch, self-decoding, finish and fail, an
unknown kind, and events or status reports from the wrong sender."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.played_verifier import FAILED, FINISHED, SELF_DECODING
from sdcp_conformance.harness.roles.status_reports import instance_path
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import assignments_to, quiet, switch

SWITCH = ("switch (2):: The verifier sends an event to the router, which assigns the session to another drafter with "
          "a permitted model")
SAME = "`switch` with no other eligible drafter reassigns the same one."
SELF = ("self_decode (3):: The verifier decodes the session itself with the target model. ... it then sends an event "
        "so that the router assigns a drafter again.")
SELF_PROFILE = "kind 3 when it starts self-decoding; kind 0 when self-decoding ends and a drafter is needed again"
END = "4 and 5 when the session finishes or fails."
UNKNOWN = 'A receiver that encounters an unknown action value MUST treat it as "fail".'
PATH_ID = "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI."
SENDER = ("It accepts a status report only from the instance it names, and an event only from the session's current "
          "verifier (else 403).")


@router_case("RTR-6.5.2-SWITCH-001", area="events", section="6.5.2, 6.1", level=Level.MUST,
             profile=("P1-EVT-1",), rows=("R-6.5.2-ROUTER-SWITCH", "R-6.1-ASSIGN-ORDER", "R-6.1-PERMITTED"))
async def switch_assigns_another_drafter(ctx: RouterContext) -> None:
    """After a switch event the session goes to another drafter with a permitted model (the verifier told first)."""
    session = await ctx.open_ok()
    for _ in range(2):
        before = ctx.drafter_of(session)
        assigned = await switch(ctx, session)
        ctx.require(assigned is not None, "no assignment followed the switch event", row="R-6.5.2-ROUTER-SWITCH",
                    expected="an assignment to another drafter", actual="none")
        assert assigned is not None and before is not None
        ctx.check(assigned.drafter != before.name, f"the switch reassigned {before.name}, although other permitted "
                  "drafters were eligible", expected="another drafter", actual=assigned.drafter)


@router_case("RTR-6.5.2-SWITCH-002", area="events", section="P1-RTR-5, 6.5.2", level=Level.PROFILE,
             profile=("P1-RTR-5",), rows=("P1-RTR-5/SAME-DRAFTER", "R-6.1-PERMITTED"))
async def switch_with_no_other_drafter(ctx: RouterContext) -> None:
    """Only drafter-2's model is permitted: a switch reassigns drafter-2 rather than leaving the session without one."""
    session = await ctx.open_ok(ctx.contract(drafters=("drafter-2",)))
    assigned = await switch(ctx, session)
    ctx.check(assigned is not None and assigned.drafter == "drafter-2",
              "after a switch with no other eligible drafter the same one was not reassigned",
              expected="drafter-2 again", actual=assigned.drafter if assigned else "no assignment")


SELF_DECODE_QUIET_S = 1.5
"""How long RTR-6.5.2-SELF-DECODE-001 watches for an assignment during self-decoding. 0.5 s let a router that
assigns on kind 3 pass under CI load (its PUT came after the window and was taken for the kind-0 assignment)."""


@router_case("RTR-6.5.2-SELF-DECODE-001", area="events", section="6.5.2, P1-EVT-1", quote=f"{SELF} ... "
             f"{SELF_PROFILE}", level=Level.MUST, profile=("P1-EVT-1", "P1-RTR-3"),
             rows=("R-6.5.2-ROUTER-SELF-DECODE", "P1-EVT-1/SELF-DECODE", "P1-RTR-3/ASSIGNMENT-STATE",
                   "R-6.1-ASSIGN-ORDER"))
async def self_decoding_then_a_drafter_again(ctx: RouterContext) -> None:
    """Kind 3: no drafter while the verifier decodes (it commits one token a round); kind 0: one is assigned,
    with the round and committed prefix the verifier reached."""
    session = await ctx.open_ok()
    verifier = ctx.serving(session)
    ctx.commit(session, 2)
    verifier.set_state(session.id, SELF_DECODING)
    mark = ctx.history.mark()
    await verifier.send_event(session.id, SELF_DECODING)
    for _ in range(3):
        ctx.commit(session, 1)
    await quiet(ctx, SELF_DECODE_QUIET_S)
    during = [*ctx.puts(session, since=mark), *ctx.assignments(session, since=mark)]
    ctx.check(not during, "the router assigned a drafter during self-decoding (before kind 0)",
              row="P1-EVT-1/SELF-DECODE", expected="no PUT …/drafter or assignment", actual=f"{len(during)}")
    mark = ctx.history.mark()
    verifier.set_state(session.id, 0)
    await verifier.send_event(session.id, 0)
    assigned = await ctx.assigned(session, since=mark)
    ctx.require(assigned is not None, "no drafter was assigned after kind 0 ended self-decoding",
                row="R-6.5.2-ROUTER-SELF-DECODE", expected="an assignment", actual="none")
    assert assigned is not None and assigned.assignment is not None
    ctx.check((assigned.assignment.round, assigned.assignment.committed) == (4, 5),
              "the assignment after self-decoding does not carry the round and committed length reached",
              row="P1-RTR-3/ASSIGNMENT-STATE", expected="round 4, committed 5",
              actual=f"round {assigned.assignment.round}, committed {assigned.assignment.committed}")


@router_case("RTR-6.5.2-END-001", area="events", section="P1-EVT-1, P1-FRONT-2", quote=END, level=Level.PROFILE,
             profile=("P1-EVT-1", "P1-CTL-3", "P1-FRONT-2"), rows=("P1-EVT-1/END", "P1-FRONT-2/OUTPUT",
                                                                   "R-6.7-FRONT-END"))
async def finished_and_failed_sessions_end(ctx: RouterContext) -> None:
    """After finish (4) or fail (5) the router assigns nothing more, even when the drafter dies, and the front's
    output ends with that finish."""
    for state in (FINISHED, FAILED):
        session = await ctx.open_ok()
        ctx.commit(session, 2)
        verifier = ctx.serving(session)
        drafter = ctx.drafter_of(session)
        verifier.end(session.id, state)
        await verifier.send_event(session.id, state)
        mark = ctx.history.mark()
        if drafter is not None:
            await drafter.die()
        await quiet(ctx, 0.5)
        later = [*ctx.puts(session, since=mark), *ctx.assignments(session, since=mark)]
        ctx.check(not later, f"after the session {'finished' if state == FINISHED else 'failed'} the router still "
                  "assigned a drafter", expected="nothing", actual=f"{len(later)} PUT/assignment(s)")
        _, last = await ctx.read_front(session, final=True)
        ctx.check(last is not None and last.final and last.finish is not None and int(last.finish) == state,
                  f"the front's output did not end with final: true and finish {state}", row="P1-FRONT-2/OUTPUT",
                  expected=f"final, finish {state}", actual=str(last.to_obj() if last else None))
        if drafter is not None:
            await drafter.revive()


@router_case("RTR-5.2-UNKNOWN-KIND-001", area="events", section="5.2, P1-DRF-9", level=Level.MUST,
             profile=("P1-DRF-9", "P1-FRONT-2"), rows=("R-5.2-UNKNOWN-ACTION", "P1-DRF-9/UNKNOWN-KIND"))
async def unknown_kind_fails_the_session(ctx: RouterContext) -> None:
    """An event of kind 9 fails the session: a later switch assigns nothing, and the front's output ends failed."""
    session = await ctx.open_ok()
    ctx.commit(session, 2)
    verifier = ctx.serving(session)
    answer = await verifier.send_event(session.id, 9)
    ctx.check(answer.ok, f"the event of unknown kind {answer.refused()}; it must be read as fail",
              expected="204", actual=answer.describe())
    mark = ctx.history.mark()
    await verifier.send_event(session.id, 2)
    await quiet(ctx, 0.5)
    later = [*ctx.puts(session, since=mark), *ctx.assignments(session, since=mark)]
    ctx.check(not later, "after an event of unknown kind (read as fail) a switch still reassigned the session",
              expected="no assignment", actual=f"{len(later)} PUT/assignment(s)")
    _, last = await ctx.read_front(session, final=True)
    finish = int(last.finish) if last is not None and last.final and last.finish is not None else None
    if finish == FINISHED:
        # The front end's final message says "finish" or "fail" (§6.7): "finish" is the unknown kind read as
        # something other than fail, the draft's MUST, whatever profile carries the message.
        ctx.deviate("R-5.2-UNKNOWN-ACTION", "the router ended the session as finished after an event of unknown "
                    "kind: its front output ended with finish 4, not fail (5)", expected=["final, finish 5"],
                    actual=str(last.to_obj() if last else None))
    else:
        ctx.check(finish == FAILED, "the router did not fail the session: its front output did not end with "
                  "finish 5", row="P1-DRF-9/UNKNOWN-KIND", expected="final, finish 5",
                  actual=str(last.to_obj() if last else None))


@router_case("RTR-P1-RTR-2-EVENT-001", area="events", section="P1-RTR-2", level=Level.PROFILE,
             profile=("P1-RTR-2",), requires=("verifiers:2",), rows=("P1-RTR-2/EVENT-SENDER",))
async def events_only_from_the_current_verifier(ctx: RouterContext) -> None:
    """A switch event from another verifier, or from a drafter, gets 403 and changes nothing."""
    session = await ctx.open_ok()
    current = ctx.serving(session)
    other = next(v for v in ctx.verifiers.values() if v is not current)
    drafter = next(iter(ctx.drafters.values()))
    mark = ctx.history.mark()
    for identity in (other.name, drafter.name):
        answer = await current.send_event(session.id, 2, identity=identity)
        ctx.expect_refusal(answer, "P1-RTR-2/EVENT-SENDER", what=f"a switch event sent by {identity}")
    await quiet(ctx, 0.3)
    later = ctx.assignments(session, since=mark)
    ctx.check(not later, "an event from a party other than the session's verifier reassigned the session",
              expected="no assignment", actual=f"{len(later)} assignment(s)")


@router_case("RTR-P1-RTR-1-PATH-001", area="events", section="P1-RTR-1, P1-RTR-2", quote=f"{PATH_ID} ... {SENDER}",
             level=Level.PROFILE, profile=("P1-RTR-1", "P1-RTR-2"), requires=("drafters:2",),
             rows=("P1-RTR-1/PATH-ID",))
async def status_path_names_its_instance(ctx: RouterContext) -> None:
    """drafter-1 sends its own status (its instance in the body) to the path of drafter-2: the path's {id} is not
    the instance the report is about, so it is refused (found by a planted bug in an independent router, which
    checked the path's encoding only)."""
    reporter, other = ctx.drafters["drafter-1"], ctx.drafters["drafter-2"]
    answer = await reporter.status.report(path=instance_path(other.uri))
    ctx.expect_refusal(answer, "P1-RTR-1/PATH-ID", what="drafter-1's status report at drafter-2's path")


@router_case("RTR-P1-RTR-2-STATUS-001", area="events", section="P1-RTR-2, 6.1", level=Level.PROFILE,
             profile=("P1-RTR-2", "P1-RTR-1"), requires=("drafters:3",),
             rows=("P1-RTR-2/STATUS-SENDER", "R-6.1-NOT-EXPIRED"))
async def status_only_from_the_instance_it_names(ctx: RouterContext) -> None:
    """drafter-2 reports status for the expired drafter-1: 403, and drafter-1 stays ineligible."""
    victim, impostor = ctx.drafters["drafter-1"], ctx.drafters["drafter-2"]
    await ctx.expire(victim)
    ctx.drafters["drafter-3"].status.load = 90
    await ctx.drafters["drafter-3"].status.report(recorded=False)
    answer = await victim.status.report(identity=impostor.name)
    ctx.expect_refusal(answer, "P1-RTR-2/STATUS-SENDER", what="a status report for drafter-1 sent by drafter-2")
    session = await ctx.open_ok(ctx.contract(drafters=("drafter-1",)))
    await switch(ctx, session)
    wrong = assignments_to(ctx, session, {"drafter-1"})
    # Had the router accepted the report, drafter-1 would not have expired by the draft alone: only the profile's
    # sender rule (P1-RTR-2) voids it, so the assignment deviates from the profile. Had it refused the report,
    # drafter-1 expired, and assigning it breaks §6.1 whatever the profile says.
    ctx.check(not wrong, "drafter-1 was assigned " + ("on the strength of a status report another instance sent for "
              "it" if answer.ok else "although its status had expired (the other instance's report was refused)"),
              row="P1-RTR-2/STATUS-SENDER" if answer.ok else "R-6.1-NOT-EXPIRED", expected="drafter-3",
              actual=f"{len(wrong)} assignment(s) to drafter-1")
