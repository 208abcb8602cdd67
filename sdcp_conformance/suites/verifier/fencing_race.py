"""Fences that arrive while the IUT appends: the 412 re-read of P1-LOG-1 and the §6.8 read-back.

The harness's cache slips a fence record into the commit log just before the
IUT's PUT of its next record: plainly (as if the router's append won the
race, so the IUT's If-Match fails and it must re-read), or spliced into the
IUT's own write by a cache that neither enforces fences nor appends
atomically (so only reading the log back after the append reveals the fence).
Either way the round must end with no verdict and no output.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.context import CaseContext
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import still_works
from sdcp_conformance.suites.verifier.fencing import (
    FENCED_APPEND,
    FENCED_ROWS,
    READ_BACK,
    READ_BACK_ROWS,
    _fence_kept,
    _stopped_serving,
)

RE_READ = "On 412 the writer re-reads: if a fence with a higher epoch is now present it stops serving the session"


async def _race(ctx: CaseContext, *, splice: bool) -> None:
    ctx.env.cache.enforce_fences = not splice
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1 before the fence")
    fence = encode({"epoch": session.epoch + 1})
    ctx.env.cache.faults.insert_before_put(urlsplit(session.commit_log).path, fence, splice=splice)
    answer = await ctx.send_proposal(ctx.proposal(session, ctx.greedy(session, 2)))
    fired = [firing for firing in ctx.env.cache.faults.fired if firing.kind.value == "insert-before-put"]
    if not fired and answer.ok:
        ctx.fail("the IUT verified the round without appending to the commit log", row="R-6.3-RECORD-FIRST",
                 expected=["a PUT of the commit record"], actual=answer.describe())
    if not fired:
        ctx.fail(f"a valid round {answer.refused()} before the IUT appended anything", row="R-6.3-STEPS",
                 expected=["a PUT of the commit record"], actual=answer.describe())
    ctx.check(not answer.ok, "the IUT sent a verdict although a fence with a higher epoch came before its "
              "commit record", row="R-6.8-READ-BACK" if splice else "R-6.3-FENCED-APPEND",
              expected="no verdict (any non-2xx)", actual=answer.describe())
    await _stopped_serving(ctx, session)
    _fence_kept(ctx, session, 1, enforcing=not splice)


@CATALOGUE.case("VER-6.8-FENCING-101", area="fencing", section="6.8", level=Level.MUST,
                quote=f"{FENCED_APPEND} ... {RE_READ}", profile=("P1-LOG-1",),
                rows=(*FENCED_ROWS, "R-6.3-RECORD-FIRST", "P1-LOG-1/RE-READ"), exclusive=True)
async def fence_wins_the_append_race(ctx: CaseContext) -> None:
    """A fence lands between the IUT's read and write of the log: its If-Match PUT fails, it re-reads and stops."""
    await _race(ctx, splice=False)


@CATALOGUE.case("VER-6.8-FENCING-102", area="fencing", section="6.8", level=Level.MUST,
                quote=f"{READ_BACK} ... {FENCED_APPEND}", profile=("P1-LOG-2",),
                rows=(*READ_BACK_ROWS, "R-6.3-RECORD-FIRST"), exclusive=True)
async def fence_spliced_into_the_append(ctx: CaseContext) -> None:
    """A cache that neither fences nor appends atomically stores a fence before the IUT's record and says
    success: only the read-back of §6.8 reveals it, and the IUT must then release nothing."""
    await _race(ctx, splice=True)
