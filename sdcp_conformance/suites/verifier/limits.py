"""Speculation limits on proposals (§6.2, §6.5.1, Table 2, P1-CTL-1, P1-DRF-2).

The limit a proposal is judged against is computed by the harness from what
it sent (m_max of the contract, m_init of its latest assignment) and from the
m_cap the IUT itself reported in its last verdict. Accepting a proposal over
the limit fails (the contract's m_max and the verdict's m_cap bound M, and
Table 2 names the refusal); refusing it with another 4xx is NON-STRICT. A
refused proposal must change nothing: a proposal of exactly the limit for
the same round is then verified. An accepted assignment with m_init 0 is one
finding, P1-DRF-2 (LIMITS-006, P1-JUDGE-4). The states where the verdict's
m_cap and the assignment's m_init part (after a reduce, a restore, a new
assignment) are driven in ``limit_readings.py``.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import outcome, still_works

DRAFT_M = ("generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict "
           "(m_init before the first).")
TABLE2 = "sdcp-limit 422 Proposal violates m_cap or m_max"
CTL1 = ("Before the first verdict of an assignment the limit is `min(m_max, m_init)` of the latest assignment the "
        "verifier received; after it, `min(m_max, m_cap)` of the last verdict. A proposal over the limit gets 422 "
        "`sdcp-limit` and changes nothing.")
M_CAP = "Each verdict carries m_cap, the largest M the drafter may use in the next round, with 1 <= m_cap <= m_max."


LIMIT_ROW = "R-6.2-LIMIT"


async def _over_then_at(ctx: VerifierContext, session: TrackedSession, limit: int, what: str) -> None:
    """M = limit + 1 is refused with 422 sdcp-limit; then M = limit for the same round is verified."""
    answer = await ctx.propose(session, ctx.greedy(session, limit + 1))
    ctx.expect_refusal(answer, ctx.case.primary_row, what=f"{what}: M = {limit + 1} over the limit {limit}")
    await still_works(ctx, session, f"{what}: M = {limit}, exactly the limit, for the same round", count=limit,
                      earlier=f"the proposal of M = {limit + 1}, which {outcome(answer)},")


@CATALOGUE.case("VER-6.2-LIMITS-001", area="limits", section="6.2", quote=f"{DRAFT_M} ... {TABLE2} ... {CTL1}",
                level=Level.MUST, profile=("P1-CTL-1",), rows=(LIMIT_ROW,))
async def over_m_init(ctx: VerifierContext) -> None:
    """Before the first verdict, M = m_init + 1 (m_init 3, m_max 8) is 422 sdcp-limit; M = m_init is verified."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, m_init=3)
    await _over_then_at(ctx, session, 3, "before the first verdict")


@CATALOGUE.case("VER-6.5.1-LIMITS-002", area="limits", section="6.2, 6.5.1",
                quote=f"{M_CAP} ... {DRAFT_M} ... {TABLE2} ... {CTL1}", level=Level.MUST, profile=("P1-CTL-1",),
                rows=(LIMIT_ROW, "R-6.5.1-M-CAP"))
async def over_m_cap(ctx: VerifierContext) -> None:
    """After a verdict, M = m_cap + 1 (the IUT's own m_cap, when below m_max) is 422; M = m_cap is verified."""
    m_max = 8
    session = await ctx.open_ok(contract=ctx.contract(m_max=m_max))
    await ctx.assign_ok(session, m_init=2)
    verdict = await still_works(ctx, session, "round 1 with M = 2", count=2)
    ctx.require(1 <= verdict.m_cap <= m_max, f"the verdict's m_cap {verdict.m_cap} is outside 1..m_max = {m_max}",
                row="R-6.5.1-M-CAP", expected=f"1 <= m_cap <= {m_max}", actual=str(verdict.m_cap))
    if verdict.m_cap >= m_max:
        ctx.informational(f"the IUT reported m_cap = m_max = {m_max}: no M is over m_cap without being over m_max "
                          "(VER-6.2-LIMITS-003 covers m_max)")
        return
    await _over_then_at(ctx, session, verdict.m_cap, f"after a verdict with m_cap {verdict.m_cap}")


@CATALOGUE.case("VER-6.2-LIMITS-003", area="limits", section="6.2", quote=f"m_max: uint .le 64, ; upper bound on M ... "
                f"{DRAFT_M} ... {TABLE2}", level=Level.MUST, profile=("P1-CTL-1",), rows=(LIMIT_ROW,))
async def over_m_max(ctx: VerifierContext) -> None:
    """With m_max 3 and an assignment's m_init 8, M = 4 is 422 sdcp-limit; M = 3 is verified."""
    session = await ctx.open_ok(contract=ctx.contract(m_max=3))
    await ctx.assign_ok(session, m_init=8)
    await _over_then_at(ctx, session, 3, "m_max 3")


@CATALOGUE.case("VER-6.2-LIMITS-004", area="limits", section="6.2", quote=f"m_max: uint .le 64, ; upper bound on M ... "
                f"{DRAFT_M} ... {TABLE2}", level=Level.MUST, profile=("P1-CTL-1",),
                rows=(LIMIT_ROW, "R-6.5.1-M-CAP"))
async def over_m_max_after_verdicts(ctx: VerifierContext) -> None:
    """With m_max 2, after a verdict M = m_cap + 1 (at most 3) is 422 sdcp-limit; M = m_cap is verified."""
    session = await ctx.open_ok(contract=ctx.contract(m_max=2))
    await ctx.assign_ok(session, m_init=2)
    verdict = await still_works(ctx, session, "round 1 at M = m_max", count=2)
    ctx.require(1 <= verdict.m_cap <= 2, f"the verdict's m_cap {verdict.m_cap} is outside 1..m_max = 2",
                row="R-6.5.1-M-CAP", expected="1 <= m_cap <= 2", actual=str(verdict.m_cap))
    await _over_then_at(ctx, session, verdict.m_cap, "after a verdict at m_max 2")


@CATALOGUE.case("VER-6.2-LIMITS-005", area="limits", section="6.2", level=Level.PROFILE,
                profile=("P1-CTL-1",), rows=("P1-CTL-1/LATEST-ASSIGNMENT",))
async def new_assignment_resets_limit(ctx: VerifierContext) -> None:
    """After a verdict, a new assignment with m_init 1 makes M = 2 over the limit (profile) and M = 1 valid."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session, m_init=4)
    verdict = await still_works(ctx, session, "round 1", count=2)
    if verdict.m_cap < 2:
        ctx.informational(f"the IUT reported m_cap {verdict.m_cap}: M = 2 is over it already, so the new "
                          "assignment's m_init cannot be told apart from the verdict's m_cap")
        return
    await ctx.assign_ok(session, m_init=1)
    await _over_then_at(ctx, session, 1, "after a new assignment with m_init 1")


@CATALOGUE.case("VER-6.1-LIMITS-006", area="limits", section="6.1",
                quote="`m_init` and `m_cap` are at least 1; the router sends max(1, min(m_max, m_init)); a drafter "
                      "answers an assignment with `m_init` 0 with 400 `sdcp-bad-message`, and so does a verifier "
                      "receiving one in `PUT sessions/{id}/drafter`.",
                level=Level.PROFILE, profile=("P1-DRF-2", "P1-CTL-1", "P1-JUDGE-4"),
                rows=("P1-DRF-2/M-INIT-ZERO", LIMIT_ROW))
async def m_init_zero(ctx: VerifierContext) -> None:
    """A PUT drafter with m_init 0 is 400 sdcp-bad-message, and the earlier assignment stays in force.

    D-JUDGE-M-INIT-ZERO (P1-JUDGE-4, one cause, one finding): a verifier that accepts the assignment deviates
    once, from P1-DRF-2 (NON-STRICT). What it then does consistently with the assignment it accepted is not
    judged again: its limit is min(m_max, 0) = 0 (P1-CTL-1), so the next proposal (M = 1) is over it and 422
    sdcp-limit is what §6.2 and Table 2 say for it; a verifier that took m_init 0 as 1 (P1-DRF-2's max(1, …))
    verifies it. Any other answer to that proposal is judged as the refusal of an over-limit proposal
    (R-6.2-LIMIT). A valid assignment then replaces the accepted one, and the session must go on.
    """
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    answer = await ctx.assign(session, m_init=0)
    ctx.expect_refusal(answer, "P1-DRF-2/M-INIT-ZERO", what="PUT sessions/{id}/drafter with m_init 0")
    if not answer.ok:
        await still_works(ctx, session, "the round after the assignment with m_init 0",
                          earlier=f"the PUT …/drafter with m_init 0, which {outcome(answer)},")
        return
    await _after_accepted_m_init_zero(ctx, session)


async def _after_accepted_m_init_zero(ctx: VerifierContext, session: TrackedSession) -> None:
    """The IUT accepted m_init 0: M = 1 is over the limit it accepted, or verified by a clamp to 1; then a valid
    assignment (m_init 4) replaces it and the session goes on."""
    accepted = "the accepted PUT …/drafter with m_init 0"
    what = f"the first proposal (M = 1) after {accepted}"
    answer = await ctx.propose(session, ctx.greedy(session, 1))
    if answer.ok:
        ctx.note(f"{what} was verified: the IUT took m_init 0 as 1, consistent with the assignment it accepted")
    elif ctx.expect_refusal(answer, LIMIT_ROW, what=f"{what}, over the limit min(m_max, 0) = 0 it accepted"):
        ctx.note(f"{what} got 422 sdcp-limit: consistent with the limit 0 the IUT accepted (P1-JUDGE-4: not judged "
                 "again)")
    await ctx.assign_ok(session, m_init=4)
    await still_works(ctx, session, "the round after a valid assignment (m_init 4) replaced the accepted m_init 0",
                      earlier=f"{accepted}, and the valid one that replaced it,")


@CATALOGUE.case("VER-6.2-LIMITS-007", area="limits", section="6.2, 5.2",
                level=Level.MUST, profile=("P1-MSG-2",), rows=("R-6.2-EMPTY",))
async def empty_proposal(ctx: VerifierContext) -> None:
    """A proposal of M = 0 tokens is refused (400 sdcp-bad-message or 422 sdcp-limit) and commits nothing."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    answer = await ctx.propose(session, [], deliberate=True)  # tokens: [+ uint] (§5.2)
    ctx.expect_refusal(answer, "R-6.2-EMPTY", what="a proposal with no tokens")
    await still_works(ctx, session, "the round after the empty proposal",
                      earlier=f"the empty proposal, which {outcome(answer)},")
