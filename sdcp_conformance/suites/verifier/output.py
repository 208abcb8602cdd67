"""Output delivery (§6.7, P1-OUT-1): indices, epochs, long-poll and the final message.

Expected tokens are the harness's own account of the session (every verdict
checked against the digest chain); reads use another identity than the
drafter's, since any authenticated party may read output (P1-DRF-6).
"""

from __future__ import annotations

import asyncio

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.messages import Output
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import (
    check_output,
    failed_session,
    finished_session,
    rejecting_token,
    started,
)

DELIVERY_QUOTE = ("Committed tokens are delivered with GET output?from=n, which returns the tokens committed at "
                  "output indices n and later, waiting up to a server-chosen time if none are available.")
STABLE_QUOTE = "Indices are stable and every output message carries the session epoch"


async def _read(ctx: VerifierContext, session: TrackedSession, start: int) -> Output:
    return ctx.expect_ok(await ctx.output(session, start, party="drafter-2"), Output, what=f"GET output?from={start}",
                         row="R-6.7-DELIVERY")


OUTPUT_ROWS = ("R-6.7-DELIVERY", "R-6.7-STABLE")


async def _rounds(ctx: VerifierContext, session: TrackedSession, count: int) -> None:
    for step in range(count):
        tokens = [rejecting_token(session)] if step % 3 == 2 else ctx.greedy(session, 3)
        await ctx.propose_ok(session, tokens)


@CATALOGUE.case("VER-6.7-OUTPUT-001", area="output", section="6.7", quote=DELIVERY_QUOTE + " ... " + STABLE_QUOTE,
                level=Level.MUST, profile=("P1-OUT-1",), rows=OUTPUT_ROWS)
async def from_zero(ctx: VerifierContext) -> None:
    """After three rounds, output?from=0 returns every committed token, the epoch, and final false."""
    session = await started(ctx)
    await _rounds(ctx, session, 3)
    output = await _read(ctx, session, 0)
    check_output(ctx, session, output, 0, "output from 0")
    ctx.check(not output.final, "the output of an active session is marked final")


@CATALOGUE.case("VER-6.7-OUTPUT-002", area="output", section="6.7", quote=DELIVERY_QUOTE + " ... " + STABLE_QUOTE,
                level=Level.MUST, profile=("P1-OUT-1",), rows=("R-6.7-STABLE", "R-6.7-DELIVERY"))
async def stable_indices(ctx: VerifierContext) -> None:
    """Reads from several indices, before and after more rounds, agree token by token."""
    session = await started(ctx)
    await _rounds(ctx, session, 2)
    seen: dict[int, int] = {}
    for _ in range(2):
        for start in sorted({0, 1, len(session.output) // 2, len(session.output) - 1}):
            output = await _read(ctx, session, start)
            check_output(ctx, session, output, start, f"output from {start}")
            for offset, token in enumerate(output.tokens):
                ctx.check(seen.setdefault(start + offset, token) == token,
                          f"index {start + offset} changed between reads")
        await _rounds(ctx, session, 2)


@CATALOGUE.case(
    "VER-6.7-OUTPUT-003", area="output", section="6.7", level=Level.MUST,
    profile=("P1-OUT-1",), rows=OUTPUT_ROWS,
    black_box_note="The read is sent before the proposal; if the server's wait ends first (an empty answer), "
                   "the case reads again, so a short server-chosen wait is accepted.",
)
async def long_poll(ctx: VerifierContext) -> None:
    """A read waiting at index n = committed returns the next round's tokens once it commits."""
    session = await started(ctx)
    await _rounds(ctx, session, 1)
    start = len(session.output)
    reader = asyncio.ensure_future(_read(ctx, session, start))
    try:
        await ctx.propose_ok(session, ctx.greedy(session, 2))
        output = await reader
    finally:
        reader.cancel()
    if not output.tokens:
        ctx.note("the waiting read ended empty; reading again")
        _check_empty_from(ctx, output, start)
        output = await _read(ctx, session, start)
    check_output(ctx, session, output, start, "long-poll output")


@CATALOGUE.case(
    "VER-6.7-OUTPUT-004", area="output", section="6.7", level=Level.PROFILE, profile=("P1-OUT-1",),
    rows=("P1-OUT-1/WAIT", "R-6.7-DELIVERY", "R-6.7-STABLE"),
    timeout_s=45.0,
)
async def beyond_committed(ctx: VerifierContext) -> None:
    """from > committed: the read waits and returns no tokens (not an error, not tokens from elsewhere)."""
    session = await started(ctx)
    await _rounds(ctx, session, 1)
    start = len(session.output) + 2
    answer = await ctx.output(session, start, party="drafter-2")
    if not ctx.check(answer.ok, f"output?from={start} beyond the committed length {answer.refused()} "
                     "(P1-OUT-1: it waits)", actual=answer.describe()):
        return
    output = ctx.expect_ok(answer, Output, what=f"GET output?from={start}")
    ctx.check(not output.tokens, f"output?from={start} returned tokens beyond the committed length",
              row="R-6.7-DELIVERY", actual=str(list(output.tokens)))
    _check_empty_from(ctx, output, start)
    ctx.check(output.epoch == session.epoch, "the output does not carry the session epoch", row="R-6.7-STABLE")


def _check_empty_from(ctx: VerifierContext, output: Output, start: int) -> None:
    """An answer with no tokens still says where they would start: at the index asked (§6.7 "the tokens committed at
    output indices n and later"); another ``from`` claims that nothing is committed there."""
    ctx.check(output.from_ == start, f"output?from={start} answered with no tokens from index {output.from_}",
              row="R-6.7-DELIVERY", expected=f"from {start}", actual=f"from {output.from_}")


@CATALOGUE.case("VER-6.7-OUTPUT-005", area="output", section="6.7", level=Level.MUST,
                profile=("P1-OUT-1",), rows=("R-6.7-FINAL", "R-6.7-DELIVERY"))
async def final_after_finish(ctx: VerifierContext) -> None:
    """After finish, a read of the last index returns final true with finish 4 (and the last token)."""
    session = (await finished_session(ctx)).session
    start = len(session.output) - 1
    output = await _read(ctx, session, start)
    check_output(ctx, session, output, start, "the final output", row="R-6.7-DELIVERY")
    ctx.check(output.final and output.finish is not None and int(output.finish) == 4,
              "the final output after finish is not final with finish 4",
              expected="final true, finish 4", actual=f"final {output.final}, finish {output.finish}")


@CATALOGUE.case("VER-6.7-OUTPUT-006", area="output", section="6.7", level=Level.MUST,
                profile=("P1-OUT-1",), rows=("R-6.7-FINAL", "R-6.7-DELIVERY"))
async def final_after_fail(ctx: VerifierContext) -> None:
    """After fail, output from 0 returns the committed tokens with final true and finish 5."""
    session = (await failed_session(ctx)).session
    output = await _read(ctx, session, 0)
    check_output(ctx, session, output, 0, "the final output", row="R-6.7-DELIVERY")
    ctx.check(output.final and output.finish is not None and int(output.finish) == 5,
              "the final output after fail is not final with finish 5",
              expected="final true, finish 5", actual=f"final {output.final}, finish {output.finish}")


@CATALOGUE.case(
    "VER-6.7-OUTPUT-007", area="output", section="6.7", level=Level.PROFILE, profile=("P1-OUT-1",),
    rows=("P1-OUT-1/AFTER-FINAL", "R-6.7-DELIVERY"),
    timeout_s=45.0,
)
async def after_final(ctx: VerifierContext) -> None:
    """After the final message, a read from the committed length returns final true and no tokens at once."""
    session = (await finished_session(ctx)).session
    answer = await ctx.output(session, len(session.output), party="drafter-2")
    if not ctx.check(answer.ok, f"a read after the final output {answer.refused()} (P1-OUT-1: final true, no tokens)",
                     actual=answer.describe()):
        return
    output = ctx.expect_ok(answer, Output, what="GET output after the final message")
    ctx.check(not output.tokens, "a read after the final output returned tokens", row="R-6.7-DELIVERY")
    ctx.check(output.final, "a read after the final output is not final (P1-OUT-1)", actual=str(output.to_obj()))
