"""Message handling at and by the router (§5.1, §5.2, P1-MSG-1/2/4): unknown keys ignored, malformed messages
refused, any 2xx taken as success, bodies labelled and deterministically encoded."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.router_truth import FrontSession
from sdcp_conformance.harness.roles.status_reports import instance_path
from sdcp_conformance.harness.self_check import deliberate
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import switch
from sdcp_conformance.suites.verifier.contract import loose_encode

MEDIA = ('Message bodies use the media type "application/sdcp+cbor". ... Request and success bodies are '
         "`application/sdcp+cbor`.")


@router_case("RTR-5.2-UNKNOWN-KEYS-001", area="messages", section="5.2", level=Level.MUST,
             rows=("R-5.2-UNKNOWN-KEYS",))
async def unknown_keys_are_ignored(ctx: RouterContext) -> None:
    """Session-states, a status report and an event with members §5.2 does not define are acted on as usual."""
    for played in ctx.verifiers.values():
        played.extra_members.update({"hint": "ignore me", "x-weight": [1, 2]})
    drafter = ctx.drafters["drafter-2"].status
    answer = await drafter.report(extra_note="ignore me")
    ctx.check(answer.ok, f"a status report with an unknown member {answer.refused()}",
              expected="2xx", actual=answer.describe())
    session = await ctx.open_ok()
    mark = ctx.history.mark()
    verifier = ctx.serving(session)
    served = verifier.serving(session.id)
    assert served is not None
    served.drafter = None
    event = await verifier.send_event(session.id, 2, reason="low acceptance")
    ctx.check(event.ok, f"an event with an unknown member {event.refused()}", expected="204",
              actual=event.describe())
    ctx.check(await ctx.assigned(session, since=mark) is not None, "a switch event with an unknown member was not "
              "acted on", expected="a new assignment", actual="none")


@router_case("RTR-5.2-WELL-FORMED-001", area="messages", section="5.2, P1-MSG-2", level=Level.MUST,
             profile=("P1-MSG-2", "P1-ERR-1"), rows=("R-5.2-WELL-FORMED", "R-5.1-PROBLEM-DETAILS"))
async def malformed_status_and_events_are_refused(ctx: RouterContext) -> None:
    """A status without ttl_ms, an event whose kind is text, and bytes that are no CBOR are refused with 400."""
    session = await ctx.open_ok()
    verifier = ctx.serving(session)
    body = verifier.status.body(4000)
    del body["ttl_ms"]
    answer = await ctx.iut.send(verifier.name, "PUT", instance_path(verifier.uri), deliberate(body))
    ctx.expect_refusal(answer, "R-5.2-WELL-FORMED", what="a status report without ttl_ms")
    event = verifier.event_body(session.id, 2) | {"kind": "switch"}
    answer = await ctx.iut.send(verifier.name, "POST", "events", deliberate(event))
    ctx.expect_refusal(answer, "R-5.2-WELL-FORMED", what="an event whose kind is a text string")
    answer = await ctx.iut.send(verifier.name, "POST", "events", b"\xff\x00not cbor")
    ctx.expect_refusal(answer, "R-5.2-WELL-FORMED", what="an event body that is not CBOR")
    ctx.check(answer.status is None or answer.ok or answer.problem is not None, "a refusal is no problem document",
              row="R-5.1-PROBLEM-DETAILS", expected="application/problem+json", actual=str(answer.content_type))
    mark = ctx.history.mark()
    answer = await ctx.iut.send(verifier.name, "POST", "events", encode(verifier.event_body(session.id, 2)))
    acted = await ctx.assigned(session, since=mark)
    ctx.check(answer.ok and acted is not None, "a valid switch event after the malformed ones was not acted on",
              row="R-5.1-RESOURCES", expected="204 and an assignment", actual=answer.describe())


@router_case("RTR-5.1-STATUS-CLASS-001", area="messages", section="5.1, P1-MSG-4", level=Level.MUST,
             profile=("P1-MSG-4",), rows=("R-5.1-RESOURCES", "R-6.1-ASSIGN-ORDER"))
async def any_2xx_is_success(ctx: RouterContext) -> None:
    """Verifiers answer the session-open 200 and PUT …/drafter 203, drafters the assignment 200: the router goes on
    as after 201, 200 and 204."""
    for played in ctx.verifiers.values():
        played.success_status.update({"open": 200, "put": 203})
    for drafter in ctx.drafters.values():
        drafter.success_status = 200
    session = await ctx.open_ok()
    assigned = await switch(ctx, session)
    ctx.check(assigned is not None, "after a 200 to its assignment the router did not go on as after a 204",
              expected="an assignment after the switch", actual="none")


@router_case("RTR-5.1-MEDIA-TYPE-001", area="messages", section="5.1, P1-MSG-1", level=Level.MUST,
             profile=("P1-MSG-1",), rows=("R-5.1-MEDIA-TYPE", "P1-MSG-1/DETERMINISTIC"))
async def bodies_are_labelled_and_deterministic(ctx: RouterContext) -> None:
    """Every body the router sends and every success body of its front is application/sdcp+cbor; the router's
    messages use core deterministic encoding."""
    session = await ctx.open_ok(ctx.contract(sampling={"temperature_milli": 1000, "seed": 2**40}))
    ctx.commit(session, 2)
    await switch(ctx, session)
    answer = await ctx.front.describe(session.id)
    ctx.check(answer.media_type_ok is not False, f"the front's description is labelled {answer.content_type!r}",
              expected="application/sdcp+cbor", actual=str(answer.content_type))
    answer, _ = await ctx.front.output(session.id, 0)
    ctx.check(answer.media_type_ok is not False, f"the front's output is labelled {answer.content_type!r}",
              expected="application/sdcp+cbor", actual=str(answer.content_type))


@router_case("RTR-P1-MSG-1-ANY-ENCODING-001", area="messages", section="P1-MSG-1, P1-FRONT-1",
             level=Level.PROFILE, profile=("P1-MSG-1", "P1-FRONT-1"),
             rows=("P1-MSG-1/ANY-ENCODING", "R-4.1-CONTRACT-UNCHANGED", "P1-FRONT-1/OPEN"))
async def loosely_encoded_requests(ctx: RouterContext) -> None:
    """A front request and a status report in indefinite-length, reversed-key, wide-integer CBOR are accepted; the
    session-open carries the contract the front was given, digest for digest."""

    contract = ctx.contract(sampling={"temperature_milli": 900, "seed": 1})
    other = ctx.new_session_id()
    body = loose_encode({"contract": contract, "prompt": [2, 7, 1], "session": other}, indefinite=True, reverse=True,
                        wide=True)
    asked = ctx.history.mark()
    answer = await ctx.front.open({}, (), body=body)
    ctx.check(answer.ok, f"a loosely encoded front request {answer.refused()}",
              expected="201", actual=answer.describe())
    tracked = FrontSession(other, contract, (2, 7, 1), (2, 7, 1), asked)
    ctx.sessions.append(tracked)
    verifier = next(iter(ctx.verifiers.values()))
    status = loose_encode(verifier.status.body(4000), reverse=True, wide=True)
    answer = await ctx.iut.send(verifier.name, "PUT", instance_path(verifier.uri), status)
    ctx.check(answer.ok, f"a loosely encoded status report {answer.refused()}", expected="204",
              actual=answer.describe())


@router_case("RTR-P1-MSG-3-PATH-001", area="messages", section="P1-MSG-3, 5.1", level=Level.PROFILE,
             profile=("P1-MSG-3", "P1-ERR-1"), rows=("P1-MSG-3/PATH-ID", "R-5.1-PROBLEM-DETAILS"))
async def malformed_session_ids_in_front_paths(ctx: RouterContext) -> None:
    """The front's `{id}` must be the unpadded base64url of 16 octets: padding, another alphabet or another length
    is 400, with a problem document."""
    # Another alphabet without "/": an id with a slash makes another path, which a router may answer 404 as an
    # unknown resource, not as a bad id (a stand-in router written apart from the reference did so).
    for bad in ("AAAAAAAAAAAAAAAAAAAAAA==", "AAAAAAAAAAAAAAAAAAAAA+", "AAAA"):
        for path in (f"client/sessions/{bad}", f"client/sessions/{bad}/output?from=0"):
            answer = await ctx.iut.send("client", "GET", path)
            ctx.expect_refusal(answer, "P1-MSG-3/PATH-ID", what=f"GET {path}")
            ctx.check(answer.problem is not None, f"the refusal of GET {path} is no problem document",
                      row="R-5.1-PROBLEM-DETAILS", expected="application/problem+json",
                      actual=str(answer.content_type))
