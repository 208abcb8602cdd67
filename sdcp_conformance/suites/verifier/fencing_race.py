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
from sdcp_conformance.harness.contexts.verifier import VerifierContext
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


async def _race(ctx: VerifierContext, *, splice: bool, enforcing: bool | None = None, rounds_before: int = 1) -> None:
    """``splice``: the fence goes into the IUT's own write; else it lands just before it. ``enforcing``: whether
    the cache refuses a record below a fence (default: not when splicing). With no round before, the log does not
    exist until the fence creates it (P1-LOG-3)."""
    enforcing = not splice if enforcing is None else enforcing
    ctx.cache.enforce_fences = enforcing
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    for number in range(1, rounds_before + 1):
        await still_works(ctx, session, f"round {number} before the fence")
    fence = encode({"epoch": session.epoch + 1})
    ctx.cache.faults.insert_before_put(urlsplit(session.commit_log).path, fence, splice=splice)
    answer = await ctx.send_proposal(ctx.proposal(session, ctx.greedy(session, 2)))
    fired = [firing for firing in ctx.cache.faults.fired if firing.kind.value == "insert-before-put"]
    if not fired and answer.ok:
        ctx.fail("the IUT verified the round without appending to the commit log", row="R-6.3-RECORD-FIRST",
                 expected=["a PUT of the commit record"], actual=answer.describe())
    if not fired:
        ctx.fail(f"a valid round {answer.refused()} before the IUT appended anything", row="R-6.3-STEPS",
                 expected=["a PUT of the commit record"], actual=answer.describe())
    if not splice and not enforcing:
        # Only the IUT's own If-Match can notice this fence: the cache takes any PUT.
        ctx.check(not answer.ok, "the IUT sent a verdict although a fence landed between its read and its write of "
                  "the log, which a conditional PUT (If-Match, or If-None-Match: * creating the log) would have met "
                  "with 412: its append was not conditional, or it took the 412 for success", row="R-6.8-CONDITIONAL",
                  expected="no verdict (any non-2xx)", actual=answer.describe())
    else:
        ctx.check(not answer.ok, "the IUT sent a verdict although a fence with a higher epoch came before its "
                  "commit record", row="R-6.8-READ-BACK" if splice else "R-6.3-FENCED-APPEND",
                  expected="no verdict (any non-2xx)", actual=answer.describe())
    await _stopped_serving(ctx, session)
    _fence_kept(ctx, session, rounds_before, enforcing=enforcing)


@CATALOGUE.case("VER-6.8-FENCING-101", area="fencing", section="6.8", level=Level.MUST,
                quote=f"{FENCED_APPEND} ... {RE_READ}", profile=("P1-LOG-1",),
                rows=(*FENCED_ROWS, "R-6.3-RECORD-FIRST", "P1-LOG-1/RE-READ"), exclusive=True)
async def fence_wins_the_append_race(ctx: VerifierContext) -> None:
    """A fence lands between the IUT's read and write of the log: its If-Match PUT fails, it re-reads and stops."""
    await _race(ctx, splice=False)


@CATALOGUE.case("VER-6.8-FENCING-102", area="fencing", section="6.8", level=Level.MUST,
                quote=f"{READ_BACK} ... {FENCED_APPEND}", profile=("P1-LOG-2",),
                rows=(*READ_BACK_ROWS, "R-6.3-RECORD-FIRST"), exclusive=True)
async def fence_spliced_into_the_append(ctx: VerifierContext) -> None:
    """A cache that neither fences nor appends atomically stores a fence before the IUT's record and says
    success: only the read-back of §6.8 reveals it, and the IUT must then release nothing."""
    await _race(ctx, splice=True)


CONDITIONAL = ("The commit_log is an MLC object to which records are appended with a conditional operation, for "
               "example an HTTP PUT with If-Match on the current entity tag [RFC9110], so that an append succeeds only "
               "if no other append has happened since the writer last read the log.")


@CATALOGUE.case("VER-6.8-FENCING-103", area="fencing", section="6.8", level=Level.MUST,
                quote=f"{CONDITIONAL} ... {RE_READ}", profile=("P1-LOG-1",),
                rows=("R-6.8-CONDITIONAL", *FENCED_ROWS, "R-6.3-RECORD-FIRST", "P1-LOG-1/RE-READ"), exclusive=True)
async def fence_lands_before_an_unguarded_write(ctx: VerifierContext) -> None:
    """A cache that does not enforce fences, and a fence landing between the IUT's read and write of the log: an
    If-Match PUT gets 412 and the re-read finds the fence; a PUT without it would erase the fence."""
    await _race(ctx, splice=False, enforcing=False)


@CATALOGUE.case("VER-6.8-FENCING-104", area="fencing", section="6.8", level=Level.MUST,
                quote=f"{CONDITIONAL} ... The first append creates it with `If-None-Match: *`. ... {RE_READ}",
                profile=("P1-LOG-1", "P1-LOG-3"),
                rows=("R-6.8-CONDITIONAL", *FENCED_ROWS, "R-6.3-RECORD-FIRST", "P1-LOG-1/RE-READ"), exclusive=True)
async def fence_creates_the_log_before_the_first_append(ctx: VerifierContext) -> None:
    """The log does not exist yet (P1-LOG-3) and a fence creates it just before the IUT's first append, on a cache
    that does not enforce fences: a PUT with If-None-Match: * gets 412 and the re-read finds the fence; a PUT
    without a precondition would erase it."""
    await _race(ctx, splice=False, enforcing=False, rounds_before=0)
