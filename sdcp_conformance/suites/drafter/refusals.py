"""Refused proposals: a 4xx is final (P1-DRF-5, §5.1), and after sdcp-q-unavailable the drafter may re-draft.

The harness refuses a proposal with a 4xx and watches the quiet window: the
same proposal must not come again (a 4xx is final; an unlisted 4xx is handled
by its class, §5.1). After 409 ``sdcp-q-unavailable`` "the round has no
verdict, so the drafter may draft and publish again and send a different
proposal for the same round" — if it does, the new proposal is for the same
round and base (ambient rows) with fresh, fetchable rows.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.suites.drafter import CATALOGUE

FINAL = "a 4xx is final."
BY_CLASS = "Errors use Problem Details [RFC9457]; clients handle unlisted status codes by class [RFC9110]."


async def _refused(ctx: DrafterContext, problem: ProblemType | None, status: int | None = None) -> None:
    session = await ctx.start(rule=1)
    await ctx.decide(session, "round 1")
    arrival = await ctx.take(session, "round 2")
    if problem is None:
        ctx.refuse_plain(session, arrival, status or 418)
        label = str(status)
    else:
        ctx.refuse(session, arrival, problem)
        label = f"{problem.status} {problem.suffix}"
    again = await ctx.next_arrival(session, ctx.pace.quiet_window())
    if again is not None:
        # The played verifier judged it as it came, whenever it comes (an unlisted 4xx is final by its class,
        # §5.1; a listed one by P1-DRF-5): one resend, one finding (P1-JUDGE-4).
        ctx.note(f"after {label} the drafter sent {again.describe()}")


def _final_case(case_id: str, problem: ProblemType | None, title: str, *, status: int | None = None,
                rows: tuple[str, ...] = ("P1-DRF-5/FINAL",), quote: str | None = None,
                level: Level = Level.PROFILE) -> None:
    async def run(ctx: DrafterContext) -> None:
        await _refused(ctx, problem, status)

    run.__doc__ = title
    CATALOGUE.case(case_id, area="refusals", section="P1-DRF-5, 5.1", quote=quote, level=level, rows=rows,
                   profile=("P1-DRF-5",))(run)


_final_case("DRF-P1-DRF-5-FINAL-001", ProblemType.NOT_ASSIGNED, "A proposal refused 403 sdcp-not-assigned is not sent "
            "again.")
_final_case("DRF-P1-DRF-5-FINAL-002", ProblemType.SESSION_CLOSED, "A proposal refused 410 sdcp-session-closed is not "
            "sent again.")
_final_case("DRF-P1-DRF-5-FINAL-003", ProblemType.BAD_PROPOSAL, "A proposal refused 422 sdcp-bad-proposal is not sent "
            "again.")
_final_case("DRF-5.1-BY-CLASS-002", None, "An unlisted 4xx (418) is handled by its class: final, not sent again.",
            status=418, rows=("R-5.1-BY-CLASS", "P1-DRF-5/FINAL"), quote=f"{BY_CLASS} ... {FINAL}", level=Level.MUST)


@CATALOGUE.case("DRF-P1-DRF-5-Q-UNAVAILABLE-001", area="refusals", section="P1-DRF-5, 6.2, 6.3",
                level=Level.MAY, profile=("P1-DRF-5", "P1-Q-1"),
                rows=("P1-DRF-5/Q-UNAVAILABLE", "R-6.2-ARTIFACTS", "R-6.4-CARRY-Q-ROWS", "P1-DRF-5/FINAL"))
async def redraft_after_q_unavailable(ctx: DrafterContext) -> None:
    """After 409 sdcp-q-unavailable a new proposal (if any) is for the same round, with fresh fetchable rows."""
    session = await ctx.start(rule=2)
    arrival = await ctx.take(session, "round 1")
    ctx.refuse(session, arrival, ProblemType.Q_UNAVAILABLE)
    again = await ctx.next_arrival(session, max(3.0, ctx.pace.quiet_window()))
    if again is None:
        ctx.informational("the drafter did not draft again after sdcp-q-unavailable (it may, P1-DRF-5)",
                          row="P1-DRF-5/Q-UNAVAILABLE")
        return
    ctx.check(again.key != arrival.key, "the refused proposal was sent again unchanged", row="P1-DRF-5/FINAL",
              expected="a different proposal", actual=again.describe())
    ctx.answer(session, again, ctx.verdict(session, again))
    await ctx.decide(session, "round 2")
