"""Who may do what at the verifier: the assigned drafter and the router (§6.1, §6.3 step 1, P1-ID-1, P1-ID-2).

Identities are the URI SANs of the harness's own certificates (drafter-1,
drafter-2, router). Proposals are judged strictly (§6.3 step 1 is a MUST);
router-only resources are judged at SHOULD, as P1-ID-2 says the draft is
silent on them (P1-ID-2).
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.messages import SessionState
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import still_works

AUTH = ("Authorization: the authenticated client MUST be the drafter named in the latest assignment the verifier "
        'received for the session; otherwise respond 403 with problem type "sdcp-not-assigned".')
LATEST = "The verifier accepts proposals only from the drafter named in the latest assignment it has received."
ID1 = ("it must equal the drafter named in the latest assignment, and the proposal's `drafter` member must equal it "
       "too.")
ID2 = ("Router-only resources (`POST sessions`, `PUT sessions/{id}/drafter`, `POST sessions/{id}/policy`) are "
       "accepted only from identities in the verifier's configured router list; others get 403 with "
       "`sdcp-not-assigned`. (Draft silent: checked as SHOULD.)")


AUTH_ROW = "R-6.3-AUTHORIZATION"


async def _refused_proposal(ctx: VerifierContext, session: TrackedSession, party: str, what: str, *,
                            member: str | None = None, row: str = AUTH_ROW) -> None:
    """A proposal for the next round sent by ``party`` (naming ``member`` as drafter) must be 403 not-assigned."""
    tokens = ctx.greedy(session, 1)
    answer = await ctx.propose(session, tokens, drafter=member or party, party=party)
    ctx.expect_refusal(answer, row, what=what)


@CATALOGUE.case("VER-6.3-AUTHORIZATION-001", area="authorization", section="6.3",
                level=Level.MUST, rows=(AUTH_ROW,))
async def no_assignment_yet(ctx: VerifierContext) -> None:
    """Before any PUT drafter, a drafter's proposal is 403 sdcp-not-assigned; after it, the round is verified."""
    session = await ctx.open_ok()
    await _refused_proposal(ctx, session, "drafter-1", "a proposal before any assignment")
    await ctx.assign_ok(session)
    await still_works(ctx, session, "the first round after the assignment")


@CATALOGUE.case("VER-6.3-AUTHORIZATION-002", area="authorization", section="6.1, 6.3",
                level=Level.MUST, rows=(AUTH_ROW,), profile=("P1-ID-1",))
async def reassignment_moves_the_right(ctx: VerifierContext) -> None:
    """After re-assignment to drafter-2, drafter-1's proposal is 403 and drafter-2's is verified."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    await still_works(ctx, session, "round 1 by drafter-1")
    await ctx.assign_ok(session, "drafter-2")
    await _refused_proposal(ctx, session, "drafter-1", "a proposal by drafter-1 after re-assignment to drafter-2")
    tokens = ctx.greedy(session, 2)
    answer = await ctx.propose(session, tokens[:1], drafter="drafter-2")
    ctx.require(answer.ok, f"drafter-2, now assigned, {answer.refused()}", expected="verdict",
                actual=answer.describe())
    ctx.check(list(session.verdicts[session.round].emitted) == tokens,
              "drafter-2's round did not commit the greedy tokens", row="R-6.3-STEPS", expected=str(tokens))


@CATALOGUE.case("VER-6.3-AUTHORIZATION-003", area="authorization", section="6.1, 6.3",
                level=Level.MUST, rows=(AUTH_ROW,))
async def reassignment_back(ctx: VerifierContext) -> None:
    """Assigned drafter-1, then drafter-2, then drafter-1 again: only drafter-1 may propose."""
    session = await ctx.open_ok()
    for drafter in ("drafter-1", "drafter-2", "drafter-1"):
        await ctx.assign_ok(session, drafter)
    await _refused_proposal(ctx, session, "drafter-2", "a proposal by drafter-2 after the session went back to "
                            "drafter-1")
    await still_works(ctx, session, "drafter-1's round after the latest assignment")


@CATALOGUE.case("VER-6.3-AUTHORIZATION-004", area="authorization", section="6.3", quote=AUTH, level=Level.MUST,
                rows=(AUTH_ROW,), profile=("P1-ID-1",))
async def other_drafter(ctx: VerifierContext) -> None:
    """drafter-2, never assigned, proposing on drafter-1's session is 403 sdcp-not-assigned."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    await _refused_proposal(ctx, session, "drafter-2", "a proposal by an unassigned drafter")
    await still_works(ctx, session, "the assigned drafter's round")


@CATALOGUE.case("VER-6.3-AUTHORIZATION-005", area="authorization", section="6.3", quote=f"{AUTH} ... {ID1}",
                level=Level.MUST, rows=(AUTH_ROW,), profile=("P1-ID-1",))
async def member_names_assigned_drafter(ctx: VerifierContext) -> None:
    """drafter-2's certificate with a proposal whose drafter member names drafter-1 (the assigned one) is 403."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    await _refused_proposal(ctx, session, "drafter-2", "a proposal by drafter-2 claiming to be drafter-1",
                            member="drafter-1")
    await still_works(ctx, session, "the assigned drafter's round")


@CATALOGUE.case("VER-6.3-AUTHORIZATION-006", area="authorization", section="6.3", level=Level.PROFILE,
                profile=("P1-ID-1",), rows=("P1-ID-1/MEMBER",))
async def member_differs_from_certificate(ctx: VerifierContext) -> None:
    """The assigned drafter-1 sending a proposal whose drafter member names drafter-2 is 403 (profile)."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    await _refused_proposal(ctx, session, "drafter-1", "a proposal whose drafter member is not its certificate's "
                            "URI SAN", member="drafter-2", row="P1-ID-1/MEMBER")
    await still_works(ctx, session, "a proposal with the right member")


@CATALOGUE.case("VER-6.3-AUTHORIZATION-007", area="authorization", section="6.3", quote=AUTH, level=Level.MUST,
                rows=(AUTH_ROW,))
async def replaced_drafter_retry(ctx: VerifierContext) -> None:
    """A replaced drafter retrying a round that has a verdict gets 403: authorization comes before idempotency."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    tokens = ctx.greedy(session, 1)
    body = ctx.proposal(session, tokens)
    await ctx.propose_ok(session, tokens)
    await ctx.assign_ok(session, "drafter-2")
    answer = await ctx.send_proposal(body, party="drafter-1")
    ctx.expect_refusal(answer, AUTH_ROW, what="a retry of round 1 by the replaced drafter-1")


@CATALOGUE.case("VER-6.3-AUTHORIZATION-008", area="authorization", section="6.3",
                quote=f"On receiving a proposal, the verifier performs these steps: ... {AUTH} ... Fencing:",
                level=Level.MUST,
                rows=(AUTH_ROW,))
async def authorization_before_fencing(ctx: VerifierContext) -> None:
    """An unassigned drafter's proposal at another epoch (higher, then lower) is 403 sdcp-not-assigned, not 409
    sdcp-stale-epoch: §6.3 step 1 (Authorization) comes before step 2 (Fencing). Found by a planted bug in an
    independent verifier that checked the epoch first: every other case sends a wrong epoch only from the
    assigned drafter, and an unassigned drafter only at the right epoch."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    tokens = ctx.greedy(session, 1)
    for epoch, which in ((session.epoch + 1, "higher"), (session.epoch - 1, "lower")):
        answer = await ctx.propose(session, tokens, drafter="drafter-2", party="drafter-2", epoch=epoch)
        ctx.expect_refusal(answer, AUTH_ROW, what=f"a proposal by the unassigned drafter-2 with a {which} epoch")
    await still_works(ctx, session, "the assigned drafter's round")


ROUTER_ONLY = "P1-ID-2/ROUTER-ONLY"


@CATALOGUE.case("VER-6.1-AUTHORIZATION-008", area="authorization", section="6.1", level=Level.SHOULD,
                profile=("P1-ID-2",), rows=(ROUTER_ONLY,))
async def drafter_opens_session(ctx: VerifierContext) -> None:
    """A drafter's POST sessions is 403 sdcp-not-assigned and creates no session."""
    session = ctx.track()
    ctx.expect_refusal(await ctx.open(session, party="drafter-1"), ROUTER_ONLY, what="POST sessions by drafter-1")
    session.contract = ctx.contract(max_new=40)
    answer = await ctx.open(session)
    state = ctx.expect_ok(answer, SessionState, what="the router's POST sessions of the same id, another contract")
    ctx.check_state(session, state, "the router's POST sessions after the drafter's was refused")


@CATALOGUE.case("VER-6.1-AUTHORIZATION-009", area="authorization", section="6.1", quote=f"{ID2} ... {LATEST}",
                level=Level.SHOULD, profile=("P1-ID-2",), rows=(ROUTER_ONLY,))
async def drafter_assigns_itself(ctx: VerifierContext) -> None:
    """drafter-1's PUT drafter naming itself is 403, and drafter-2 (assigned by the router) stays the drafter."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-2")
    ctx.expect_refusal(await ctx.assign(session, "drafter-1", party="drafter-1"), ROUTER_ONLY,
                       what="PUT sessions/{id}/drafter by drafter-1")
    answer = await ctx.propose(session, ctx.greedy(session, 1), drafter="drafter-1")
    ctx.expect_refusal(answer, ROUTER_ONLY, what="drafter-1's proposal after its own PUT drafter")


@CATALOGUE.case("VER-6.6-AUTHORIZATION-010", area="authorization", section="6.6", level=Level.SHOULD,
                profile=("P1-ID-2",), rows=(ROUTER_ONLY,))
async def drafter_posts_policy(ctx: VerifierContext) -> None:
    """drafter-1's POST policy (even for its own session) is 403 sdcp-not-assigned."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, "drafter-1")
    answer = await ctx.policy(session, session.round + 1, {"temperature_milli": 0}, party="drafter-1")
    ctx.expect_refusal(answer, ROUTER_ONLY, what="POST sessions/{id}/policy by drafter-1")
    await still_works(ctx, session, "the round after the refused policy")
