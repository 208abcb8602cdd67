"""The commit log (§6.3 Commit, §6.8, P1-LOG-1): every verdict's tokens are in the log before the verdict arrives.

The harness is the MLC, so it reads the log directly, and its transcript
orders the IUT's log writes against the answers the harness received. A
delay injected on the log's PUT answers makes the order unambiguous: a
verifier that waits for its append cannot answer before the delayed PUT
completes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.context import CaseContext, TrackedSession
from sdcp_conformance.harness.transcript import Entry
from sdcp_conformance.protocol.messages import Output, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier._cases_b_support import cache_path, commit_records, rejecting_token, started

COMMIT_QUOTE = ("appends a commit record (epoch, round, emitted tokens, n, and d[n]) to the session's commit_log "
                "(Section 6.8); only after that append succeeds does it send the verdict and make the tokens "
                "available as output.")
RECORD_KEYS = ("epoch", "round", "emitted", "committed", "digest")


def _require_record(ctx: CaseContext, session: TrackedSession, record: dict[str, Any], verdict: Verdict) -> None:
    wanted = {"epoch": session.epoch, "round": verdict.round, "emitted": list(verdict.emitted),
              "committed": verdict.committed, "digest": verdict.digest}
    actual = {key: record.get(key) for key in RECORD_KEYS}
    if isinstance(actual["emitted"], tuple | list):
        actual["emitted"] = list(actual["emitted"])
    ctx.require(actual == wanted, f"the commit record of round {verdict.round} does not match its verdict",
                expected=str(wanted), actual=str(actual))


def _record_for(ctx: CaseContext, session: TrackedSession, round_number: int) -> dict[str, Any]:
    records = [record for record in commit_records(ctx, session) if record.get("round") == round_number]
    ctx.require(len(records) == 1, f"the commit log holds {len(records)} records for round {round_number}, not one",
                actual=str(commit_records(ctx, session)))
    return records[0]


@CATALOGUE.case(
    "VER-6.3-LOG-001", area="commit-log", section="6.3, 6.8", quote=COMMIT_QUOTE + " ... A commit record appended "
    "by a verifier MUST carry the session's current epoch and follow the last record it wrote.", level=Level.MUST,
    profile=("P1-LOG-1",),
)
async def records_match_verdicts(ctx: CaseContext) -> None:
    """After each of four verdicts (one with a = 0), the log's last record equals the verdict, in order."""
    session = await started(ctx)
    for step in range(4):
        tokens = [rejecting_token(session)] if step == 2 else ctx.greedy(session, 3)
        verdict = await ctx.propose_ok(session, tokens)
        record = _record_for(ctx, session, verdict.round)
        _require_record(ctx, session, record, verdict)
        last = commit_records(ctx, session)[-1]
        ctx.require(last is record or last == record, "the newest record is not the last one in the log")
    rounds = [record.get("round") for record in commit_records(ctx, session)]
    ctx.require(rounds == [1, 2, 3, 4], f"the log's rounds are {rounds}, not 1..4 in order")


def _entries(ctx: CaseContext) -> list[Entry]:
    return ctx.transcript.entries()


def _last_log_put(ctx: CaseContext, session: TrackedSession) -> Entry | None:
    path = cache_path(session.commit_log)
    puts = [entry for entry in _entries(ctx)
            if entry.direction == "from-iut" and entry.method == "PUT" and entry.target.split("?")[0] == path
            and entry.status is not None and 200 <= entry.status < 300]
    return puts[-1] if puts else None


@CATALOGUE.case(
    "VER-6.3-LOG-002", area="commit-log", section="6.3", quote=COMMIT_QUOTE, level=Level.MUST,
    profile=("P1-LOG-1",),
    black_box_note="Every answer to a PUT of the log is held back 0.4 s after it was applied; the verdict must "
                   "reach the harness after the successful PUT's answer was sent (transcript order).",
)
async def append_before_verdict(ctx: CaseContext) -> None:
    """The verdict arrives only after the commit-log append (delayed by the cache) has completed."""
    session = await started(ctx)
    ctx.env.cache.faults.delay(cache_path(session.commit_log), 0.4, 10, methods=frozenset({"PUT"}))
    await ctx.propose_ok(session, ctx.greedy(session, 2))
    put = _last_log_put(ctx, session)
    ctx.require(put is not None, "no successful PUT of the commit log happened before the verdict")
    assert put is not None
    verdict_entry = [entry for entry in _entries(ctx) if entry.direction == "to-iut" and entry.target == "proposals"]
    ctx.require(put.sequence < verdict_entry[-1].sequence,
                "the verdict reached the harness before the commit-log append completed",
                expected=f"PUT #{put.sequence} before verdict", actual=f"verdict #{verdict_entry[-1].sequence}")


@CATALOGUE.case(
    "VER-6.3-LOG-003", area="commit-log", section="6.3, 6.7", quote=COMMIT_QUOTE + " ... Only tokens whose commit "
    "record has been written are returned.", level=Level.MUST, profile=("P1-LOG-1",),
    black_box_note="The cache refuses every PUT of the log with 503. No verdict may come back (any non-2xx or no "
                   "answer is accepted), no record may appear, and a read of the output waiting from index 0 "
                   "must not receive the round's tokens; once the cache works again the same proposal commits.",
)
async def failed_append_releases_nothing(ctx: CaseContext) -> None:
    """A failing commit-log append: no verdict, no record, no output; a retry later commits normally."""
    session = await started(ctx)
    reader = asyncio.ensure_future(ctx.output(session, 0, party="drafter-2"))
    try:
        await _append_fails_then_works(ctx, session, reader)
    finally:
        reader.cancel()


async def _append_fails_then_works(ctx: CaseContext, session: TrackedSession, reader: asyncio.Future[Any]) -> None:
    fault = ctx.env.cache.faults.reject_appends(cache_path(session.commit_log), 100, status=503)
    tokens = ctx.greedy(session, 2)
    answer = await ctx.propose(session, tokens)
    ctx.env.cache.faults.disarm(fault)
    ctx.require(not answer.ok, "a verdict was sent although the commit-log append failed",
                expected="no verdict", actual=answer.describe())
    ctx.require(not commit_records(ctx, session), "a commit record is in the log although every PUT was refused")
    await _no_early_output(ctx, reader)
    verdict = await ctx.propose_ok(session, tokens)
    _require_record(ctx, session, _record_for(ctx, session, 1), verdict)
    if not reader.done():
        output = ctx.expect_ok(await reader, Output, what="GET output (waiting)")
        ctx.require(list(output.tokens) in ([], list(verdict.emitted)),
                    "the waiting output read returned tokens other than the committed round's")


async def _no_early_output(ctx: CaseContext, reader: asyncio.Future[Any]) -> None:
    """Give a released output a moment (bounded) to arrive; it must carry no tokens if it did."""
    await asyncio.wait({reader}, timeout=0.3)
    if reader.done():
        output = ctx.expect_ok(reader.result(), Output, what="GET output (waiting)")
        ctx.require(not output.tokens, "output was released for a round whose commit-log append failed",
                    expected="no tokens", actual=str(list(output.tokens)))


@CATALOGUE.case(
    "VER-6.8-LOG-004", area="commit-log", section="6.7, 6.8", quote="Only tokens whose commit record has been "
    "written are returned.", level=Level.MUST, profile=("P1-LOG-1", "P1-OUT-1"),
    black_box_note="Every answer to a PUT of the log is held back 0.4 s; an output read waiting from index 0 must "
                   "be answered after the successful PUT completed (transcript order).",
)
async def output_after_record(ctx: CaseContext) -> None:
    """A waiting output read is answered only after the commit record's append completed."""
    session = await started(ctx)
    reader = asyncio.ensure_future(ctx.output(session, 0, party="drafter-2"))
    try:
        ctx.env.cache.faults.delay(cache_path(session.commit_log), 0.4, 10, methods=frozenset({"PUT"}))
        verdict = await ctx.propose_ok(session, ctx.greedy(session, 2))
        output = ctx.expect_ok(await reader, Output, what="GET output (waiting)")
    finally:
        reader.cancel()
    if not output.tokens:  # the server's wait ended first: nothing to order
        ctx.note("the waiting read returned empty before the round committed")
        return
    ctx.require(list(output.tokens) == list(verdict.emitted), "the waiting read returned other tokens")
    put = _last_log_put(ctx, session)
    reads = [entry for entry in _entries(ctx) if entry.direction == "to-iut" and entry.method == "GET"]
    ctx.require(put is not None and put.sequence < reads[-1].sequence,
                "the output was released before the commit-log append completed",
                expected="PUT answered before output", actual=f"PUT {put.sequence if put else None}, "
                f"output #{reads[-1].sequence}")
