"""Closed sessions (P1-CTL-3): after finish or fail, nothing changes the session; output stays readable.

Committing tokens after a finish or a failure contradicts the draft itself
(§6.5.2 "Generation has ended", "ends the session with an error"), so an
accepted proposal is FAILED (and those cases are MUST); the exact answer
(410 sdcp-session-closed) and refusing drafter changes and policies are the
profile's (NON-STRICT).
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.messages import Output, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import check_output, failed_session, finished_session

CLOSED_QUOTE = ("After `finish` or `fail` every new proposal, drafter change and policy update gets 410 "
                "`sdcp-session-closed`; output stays readable.")
PROFILE = ("P1-CTL-3",)


ENDED_ROW = "R-6.5.2-ENDED"
CLOSED_ROW = "P1-CTL-3/CLOSED"


async def _proposal_refused(ctx: VerifierContext, session: TrackedSession) -> None:
    """A verdict after the end is FAILED (generation has ended); another refusal than 410 is NON-STRICT."""
    answer = await ctx.propose(session, ctx.greedy(session, 2))
    ctx.expect_refusal(answer, ENDED_ROW, what="a proposal after the session ended")


@CATALOGUE.case(
    "VER-6.5-CLOSED-001", area="closed", section="6.5.2", quote=CLOSED_QUOTE + " ... " +
    "finish (4):: Generation has ended because of a stop token or max_new.", level=Level.MUST, profile=PROFILE,
    rows=(ENDED_ROW,),
    black_box_note="A verdict for a new round after finish is FAILED (generation has ended); another refusal "
                   "than 410 is NON-STRICT.",
)
async def proposal_after_finish(ctx: VerifierContext) -> None:
    """A next-round proposal after finish: 410 sdcp-session-closed."""
    await _proposal_refused(ctx, (await finished_session(ctx)).session)


@CATALOGUE.case(
    "VER-6.5-CLOSED-002", area="closed", section="6.5.2", quote=CLOSED_QUOTE + " ... " +
    "fail (5):: The verifier ends the session with an error.", level=Level.MUST, profile=PROFILE,
    rows=(ENDED_ROW,),
    black_box_note="A verdict for a new round after fail is FAILED; another refusal than 410 is NON-STRICT.",
)
async def proposal_after_fail(ctx: VerifierContext) -> None:
    """A next-round proposal after fail: 410 sdcp-session-closed."""
    await _proposal_refused(ctx, (await failed_session(ctx)).session)


@CATALOGUE.case("VER-6.5-CLOSED-003", area="closed", section="6.5.2", level=Level.PROFILE,
                profile=PROFILE, rows=(CLOSED_ROW,))
async def drafter_after_finish(ctx: VerifierContext) -> None:
    """PUT sessions/{id}/drafter after finish: 410 sdcp-session-closed."""
    session = (await finished_session(ctx)).session
    answer = await ctx.assign(session, "drafter-2")
    ctx.expect_refusal(answer, CLOSED_ROW, what="a drafter change after finish")


@CATALOGUE.case("VER-6.5-CLOSED-004", area="closed", section="6.5.2", level=Level.PROFILE,
                profile=PROFILE, rows=(CLOSED_ROW,))
async def policy_after_fail(ctx: VerifierContext) -> None:
    """POST sessions/{id}/policy after fail: 410 sdcp-session-closed."""
    session = (await failed_session(ctx)).session
    answer = await ctx.policy(session, session.round + 1, {"temperature_milli": 500})
    ctx.expect_refusal(answer, CLOSED_ROW, what="a policy after fail")


@CATALOGUE.case(
    "VER-6.5-CLOSED-005", area="closed", section="6.7", level=Level.MUST, profile=PROFILE,
    rows=("R-6.7-FINAL", "R-6.7-DELIVERY"),
)
async def output_after_end(ctx: VerifierContext) -> None:
    """Output stays readable after finish and after fail: all tokens, final, finish 4 or 5."""
    for make, finish in ((finished_session, 4), (failed_session, 5)):
        session = (await make(ctx)).session
        output = ctx.expect_ok(await ctx.output(session, 0), Output, what="GET output after the end",
                               row="R-6.7-DELIVERY")
        check_output(ctx, session, output, 0, "output after the end", row="R-6.7-DELIVERY")
        ctx.check(output.final and output.finish is not None and int(output.finish) == finish,
                  f"the output after the end is not final with finish {finish}",
                  expected=f"final true, finish {finish}", actual=f"final {output.final}, finish {output.finish}")


@CATALOGUE.case(
    "VER-6.5-CLOSED-006", area="closed", section="6.3", level=Level.MUST, profile=(*PROFILE, "P1-IDEM-1"),
    rows=("R-6.3-IDEMPOTENCY", "P1-CTL-3/RETRY"),
    quote="Idempotency: if a verdict for this round already exists, return it unchanged ... A retry of a round "
          "that already has a verdict still gets that verdict (idempotency comes first).",
)
async def retry_after_end(ctx: VerifierContext) -> None:
    """Retrying the last round after finish and after fail returns its verdict unchanged, not 410."""
    for make in (finished_session, failed_session):
        ended = await make(ctx)
        again = ctx.expect_ok(await ctx.send_proposal(ended.body), Verdict, what="retry of the last round",
                              row="R-6.3-IDEMPOTENCY")
        ctx.check(again == ended.verdict, "the retry's verdict differs from the stored one",
                  expected=str(ended.verdict.to_obj()), actual=str(again.to_obj()))
