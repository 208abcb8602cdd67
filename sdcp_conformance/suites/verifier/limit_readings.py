"""The speculation limit in the states where two readings of it differ (§6.2, §6.5.1, §6.5.2, P1-CTL-1, P1-CTL-4).

The limits cases proper judge the limit where the m_cap in force equals m_init, so a verifier that keeps
enforcing min(m_max, m_init) after its own verdicts lowered m_cap passes them. These cases drive the IUT into the
states where the readings part, and do not rely on the m_cap it happens to choose:

- after a ``reduce`` (fallback [reduce, ...], R = 1, one round with a = 0) the last verdict's m_cap is below
  m_init (LIMITS-008);
- after the restore that follows it (P1-CTL-4: by one per round that is not low) it is still below m_init, and
  not the reduced value either (LIMITS-009);
- a new assignment's m_init lies between or away from both the last verdict's m_cap and the earlier m_init
  (LIMITS-010).

D-JUDGE-LIMIT-READINGS. Where the draft decides, the limit is the m_cap the IUT itself reported in its last
verdict (§6.2: "m_cap is the limit from the last verdict"; §6.5.1: "the largest M the drafter may use in the next
round"): a proposal over it accepted is FAILED on R-6.2-LIMIT, and a proposal of exactly that M refused with
``sdcp-limit`` is FAILED on R-6.5.1-M-CAP. Only after a new assignment does the draft leave the reading open
("m_init before the first" does not say of what): there P1-CTL-1 decides (the latest assignment's m_init until
that assignment's first verdict), and a deviation that the last verdict's m_cap would allow is NON-STRICT on
P1-CTL-1/LATEST-ASSIGNMENT; a proposal over both readings is still FAILED. How far m_cap falls or rises is
VER-6.5-ESC-003's and ESC-005's subject, not judged here: when the IUT's m_cap does not reach a state where the
readings differ, the case says so (INFORMATIONAL) and stops.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import outcome, rejecting_token, started, still_works
from sdcp_conformance.suites.verifier.limits import CTL1, DRAFT_M, LIMIT_ROW, M_CAP, TABLE2

REDUCE = "reduce (1):: The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds."
RESTORE = ("After a reduction, m_cap is restored by one per round that is not low, up to min(m_max, m_init of the "
           "latest assignment).")
M_CAP_ROW = "R-6.5.1-M-CAP"
ASSIGNMENT_ROW = "P1-CTL-1/LATEST-ASSIGNMENT"

M_MAX = 8
M_INIT = 6
"""min(m_max, m_init) = 6; a reduce halves it to 3, one good round restores it to 4 (P1-CTL-4): all three apart."""

STATE_NOTE = ("The limit judged is the m_cap the IUT reported in its last verdict; where that m_cap does not reach "
              "a state in which the readings differ (how far it falls or rises is the escalation cases' subject), "
              "the case is INFORMATIONAL.")


def reported_cap(ctx: VerifierContext, verdict: Verdict) -> int:
    """§6.5.1: the verdict's m_cap, which must lie in 1..m_max (the case stops otherwise)."""
    ctx.require(1 <= verdict.m_cap <= M_MAX, f"round {verdict.round}: the verdict's m_cap {verdict.m_cap} is outside "
                f"1..m_max = {M_MAX}", row=M_CAP_ROW, expected=f"1 <= m_cap <= {M_MAX}", actual=str(verdict.m_cap))
    return verdict.m_cap


async def reduced(ctx: VerifierContext) -> tuple[TrackedSession, Verdict]:
    """A session whose first round (a = 0) reduced m_cap: with R = 1 and fallback [reduce x3] every round with
    a = 0 reduces (§6.5.2), whatever the verifier's load."""
    session = await started(ctx, m_init=M_INIT, m_max=M_MAX, low_rounds=1, fallback=[1, 1, 1])
    verdict = await ctx.propose_ok(session, [rejecting_token(session)])
    return session, verdict


def below_m_init(ctx: VerifierContext, cap: int, state: str) -> bool:
    """Whether the IUT's m_cap is below min(m_max, m_init), where the two readings of the limit part; if not, say so."""
    if cap < M_INIT:
        return True
    ctx.informational(f"{state} the IUT reported m_cap {cap}, not below min(m_max, m_init) = {M_INIT}: the last "
                      "verdict's m_cap and the assignment's m_init cannot be told apart in this session")
    return False


async def over_then_at(ctx: VerifierContext, session: TrackedSession, limit: int, what: str, *, over_row: str,
                       at_row: str) -> None:
    """M = limit + 1 is refused (judged on ``over_row``) and changes nothing; then M = limit is verified for the same
    round (a 422 sdcp-limit for it is a finding on ``at_row``). After an over-limit proposal that was accepted
    (the finding), the next round's limit is that verdict's m_cap: the follow-up is M = 1, judged on nothing but
    the session going on."""
    over = await ctx.propose(session, ctx.greedy(session, limit + 1))
    ctx.expect_refusal(over, over_row, what=f"{what}: M = {limit + 1} over the limit {limit}")
    if over.ok:
        await still_works(ctx, session, f"{what}: the round after the accepted M = {limit + 1}",
                          earlier=f"the accepted proposal of M = {limit + 1}")
        return
    await still_works(ctx, session, f"{what}: M = {limit}, exactly the limit, for the same round", count=limit,
                      earlier=f"the proposal of M = {limit + 1}, which {outcome(over)},", limit_row=at_row)


@CATALOGUE.case("VER-6.5.1-LIMITS-008", area="limits", section="6.2, 6.5.1, 6.5.2",
                quote=f"{DRAFT_M} ... {M_CAP} ... {REDUCE} ... {TABLE2}", level=Level.MUST, profile=("P1-CTL-1",),
                rows=(LIMIT_ROW, M_CAP_ROW), black_box_note=STATE_NOTE)
async def limit_after_reduce(ctx: VerifierContext) -> None:
    """After a reduce (m_init 6 -> m_cap 3), M = m_cap + 1, within m_init, is 422 sdcp-limit; M = m_cap is verified."""
    session, verdict = await reduced(ctx)
    cap = reported_cap(ctx, verdict)
    if not below_m_init(ctx, cap, "After a low round with fallback [reduce] and R = 1,"):
        return
    await over_then_at(ctx, session, cap, f"after the reduce to m_cap {cap} (m_init {M_INIT})", over_row=LIMIT_ROW,
                       at_row=M_CAP_ROW)


@CATALOGUE.case("VER-6.5.1-LIMITS-009", area="limits", section="6.2, 6.5.1",
                quote=f"{DRAFT_M} ... {M_CAP} ... {TABLE2} ... {RESTORE}", level=Level.MUST,
                profile=("P1-CTL-1", "P1-CTL-4"), rows=(LIMIT_ROW, M_CAP_ROW), black_box_note=STATE_NOTE)
async def limit_after_restore(ctx: VerifierContext) -> None:
    """After a reduce (6 -> 3) and a good round (P1-CTL-4: 3 -> 4), the last verdict's m_cap is the limit: M = m_cap + 1
    is 422 sdcp-limit, M = m_cap is verified."""
    session, first = await reduced(ctx)
    reduced_cap = reported_cap(ctx, first)
    verdict = await ctx.propose_ok(session, ctx.greedy(session, 1))
    cap = reported_cap(ctx, verdict)
    if not below_m_init(ctx, cap, "After a reduce and a round that is not low,"):
        return
    if cap == reduced_cap:  # the restore is ESC-005's subject; here the limit must follow whatever was reported
        ctx.note(f"m_cap stayed {cap} after the round that was not low (P1-CTL-4 restores by one)")
    await over_then_at(ctx, session, cap, f"after the restore to m_cap {cap} (reduced to {reduced_cap}, m_init "
                       f"{M_INIT})", over_row=LIMIT_ROW, at_row=M_CAP_ROW)


@CATALOGUE.case("VER-6.2-LIMITS-010", area="limits", section="6.2", quote=f"{CTL1} ... {DRAFT_M} ... {TABLE2}",
                level=Level.PROFILE, profile=("P1-CTL-1",), rows=(ASSIGNMENT_ROW, LIMIT_ROW, M_CAP_ROW),
                black_box_note=STATE_NOTE)
async def limit_after_new_assignment(ctx: VerifierContext) -> None:
    """After a reduce (6 -> 3), a new assignment with m_init 5 sets the limit: M = 6 is 422 sdcp-limit, M = 5 is
    verified (P1-CTL-1), where the last verdict's m_cap (3) and the earlier m_init (6) say otherwise."""
    session, verdict = await reduced(ctx)
    cap = reported_cap(ctx, verdict)
    m_init = 5 if cap != 5 else 4  # apart from the last verdict's m_cap and from the earlier m_init (6)
    await ctx.assign_ok(session, m_init=m_init)
    ctx.note(f"the last verdict's m_cap is {cap}; the new assignment's m_init {m_init}; the earlier one's {M_INIT}")
    # M = m_init + 1 is over the new m_init (P1-CTL-1); it is over the last verdict's m_cap too, unless that is
    # higher: then only the profile makes it over the limit. M = m_init is within P1-CTL-1's limit; the last
    # verdict's m_cap allows it only when it is no lower: otherwise only the profile makes it valid.
    await over_then_at(ctx, session, m_init, f"after a new assignment with m_init {m_init} (last verdict's m_cap "
                       f"{cap})", over_row=LIMIT_ROW if m_init + 1 > cap else ASSIGNMENT_ROW,
                       at_row=M_CAP_ROW if m_init <= cap else ASSIGNMENT_ROW)
