"""The commit log (§6.3 Commit, §6.8, P1-LOG-1): every verdict's tokens are in the log before the verdict arrives.

The harness is the MLC, so it reads the log directly and decides when the
IUT's append completes: it holds the log's PUT until it has seen what the
IUT does meanwhile. A verifier that waits for its append cannot send a
verdict, or release output, while the PUT is held.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.transcript import Entry
from sdcp_conformance.protocol.messages import Output, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import cache_path, commit_records, rejecting_token, started

COMMIT_QUOTE = ("appends a commit record (epoch, round, emitted tokens, n, and d[n]) to the session's commit_log "
                "(Section 6.8); only after that append succeeds does it send the verdict and make the tokens "
                "available as output.")
RECORD_KEYS = ("epoch", "round", "emitted", "committed", "digest")
HOLD_S = 2.0
"""How long a held append is kept while the harness looks for an early verdict or output.

A correct verifier never answers while its append is held, so this window
cannot cause a false alarm; it only bounds how long a leaking verifier has to
show the leak."""
LOG_ROWS = ("R-6.3-RECORD-FIRST", "R-6.8-RECORD")


def _require_record(ctx: VerifierContext, session: TrackedSession, record: dict[str, Any], verdict: Verdict) -> None:
    wanted = {"epoch": session.epoch, "round": verdict.round, "emitted": list(verdict.emitted),
              "committed": verdict.committed, "digest": verdict.digest}
    actual = {key: record.get(key) for key in RECORD_KEYS}
    if isinstance(actual["emitted"], tuple | list):
        actual["emitted"] = list(actual["emitted"])
    ctx.check(actual == wanted, f"the commit record of round {verdict.round} does not match its verdict",
              row="R-6.8-RECORD", expected=str(wanted), actual=str(actual))


def _record_for(ctx: VerifierContext, session: TrackedSession, round_number: int) -> dict[str, Any]:
    records = [record for record in commit_records(ctx, session) if record.get("round") == round_number]
    ctx.require(len(records) == 1, f"the commit log holds {len(records)} records for round {round_number}, not one",
                row="R-6.3-RECORD-FIRST", actual=str(commit_records(ctx, session)))
    return records[0]


@CATALOGUE.case(
    "VER-6.3-LOG-001", area="commit-log", section="6.3, 6.8", quote=COMMIT_QUOTE + " ... A commit record appended "
    "by a verifier MUST carry the session's current epoch and follow the last record it wrote.", level=Level.MUST,
    profile=("P1-LOG-1",), rows=LOG_ROWS,
)
async def records_match_verdicts(ctx: VerifierContext) -> None:
    """After each of four verdicts (one with a = 0), the log's last record equals the verdict, in order."""
    session = await started(ctx)
    for step in range(4):
        tokens = [rejecting_token(session)] if step == 2 else ctx.greedy(session, 3)
        verdict = await ctx.propose_ok(session, tokens)
        record = _record_for(ctx, session, verdict.round)
        _require_record(ctx, session, record, verdict)
        last = commit_records(ctx, session)[-1]
        ctx.check(last is record or last == record, "the newest record is not the last one in the log",
                  row="R-6.8-RECORD")
    rounds = [record.get("round") for record in commit_records(ctx, session)]
    ctx.check(rounds == [1, 2, 3, 4], f"the log's rounds are {rounds}, not 1..4 in order", row="R-6.8-RECORD")


def _entries(ctx: VerifierContext) -> list[Entry]:
    return ctx.transcript.entries()


def _log_puts(ctx: VerifierContext, session: TrackedSession) -> list[Entry]:
    path = cache_path(session.commit_log)
    return [entry for entry in _entries(ctx)
            if entry.direction == "from-iut" and entry.method == "PUT" and entry.target.split("?")[0] == path
            and entry.status is not None and 200 <= entry.status < 300]


@CATALOGUE.case(
    "VER-6.3-LOG-002", area="commit-log", section="6.3", level=Level.MUST,
    profile=("P1-LOG-1",), rows=LOG_ROWS,
    black_box_note="The harness holds the IUT's PUT of the commit record; no verdict may arrive while it is held, "
                   "and the verdict that arrives after it is released must match the record.",
)
async def append_before_verdict(ctx: VerifierContext) -> None:
    """While the commit-log append is held by the cache, no verdict arrives; after it, the verdict does."""
    session = await started(ctx)
    gate = ctx.cache.faults.hold(cache_path(session.commit_log), methods=frozenset({"PUT"}))
    proposal = asyncio.ensure_future(ctx.propose(session, ctx.greedy(session, 2), held_s=HOLD_S))
    try:
        held = await gate.wait_arrival(HOLD_S * 2)
        if held:
            done, _ = await asyncio.wait({proposal}, timeout=HOLD_S)
            early = proposal.result() if done else None
            # A verdict is a success; a refusal or a lost exchange while the append is held is no verdict.
            ctx.check(early is None or not early.ok, "the verdict arrived while the commit-log append was still "
                      "held by the cache", expected="the verdict only after the append completed",
                      actual=early.describe() if early is not None else "")
    finally:
        gate.open()
    answer = await proposal
    ctx.require(not answer.ok or bool(_log_puts(ctx, session)), "a verdict was sent without any append to the "
                "commit log", actual=answer.describe())
    verdict = ctx.expect_ok(answer, Verdict, what="POST proposals")
    _require_record(ctx, session, _record_for(ctx, session, verdict.round), verdict)


@CATALOGUE.case(
    "VER-6.3-LOG-003", area="commit-log", section="6.3, 6.7", quote=COMMIT_QUOTE + " ... Only tokens whose commit "
    "record has been written are returned.", level=Level.MUST, profile=("P1-LOG-1",),
    rows=(*LOG_ROWS, "R-6.7-ONLY-RECORDED"),
    black_box_note="The cache refuses every PUT of the log with 503. No verdict may come back (any non-2xx or no "
                   "answer is accepted) and no record may appear. A read waiting from index 0 since before the "
                   "round is then answered only by the tokens of a *different* round 1 the harness sends once the "
                   "cache works again (one token fewer), so a leaked output of the failed round shows whenever it "
                   "arrived.",
)
async def failed_append_releases_nothing(ctx: VerifierContext) -> None:
    """A failing commit-log append: no verdict, no record, no output; another round 1 later commits normally."""
    session = await started(ctx)
    reader = asyncio.ensure_future(ctx.output(session, 0, party="drafter-2"))
    try:
        await _append_fails_then_works(ctx, session, reader)
    finally:
        reader.cancel()


async def _append_fails_then_works(ctx: VerifierContext, session: TrackedSession, reader: asyncio.Future[Any]) -> None:
    fault = ctx.cache.faults.reject_appends(cache_path(session.commit_log), 100, status=503)
    greedy = ctx.greedy(session, 3)
    answer = await ctx.propose(session, greedy[:2])
    ctx.cache.faults.disarm(fault)
    ctx.check(not answer.ok, "a verdict was sent although the commit-log append failed",
              row="R-6.3-RECORD-FIRST", expected="no verdict", actual=answer.describe())
    ctx.check(not commit_records(ctx, session), "a commit record is in the log although every PUT was refused",
              row="R-6.3-RECORD-FIRST")
    if answer.ok:
        return
    verdict = await ctx.propose_ok(session, greedy[:1])
    _require_record(ctx, session, _record_for(ctx, session, 1), verdict)
    output = ctx.expect_ok(await reader, Output, what="GET output (waiting since before the failed round)")
    ctx.check(list(output.tokens) in ([], list(verdict.emitted)),
              "the waiting output read returned tokens of the round whose append failed",
              row="R-6.7-ONLY-RECORDED", expected=f"[] or {list(verdict.emitted)}", actual=str(list(output.tokens)))


@CATALOGUE.case(
    "VER-6.8-LOG-004", area="commit-log", section="6.7, 6.8", level=Level.MUST, profile=("P1-LOG-1", "P1-OUT-1"),
    rows=("R-6.7-ONLY-RECORDED",),
    black_box_note="The harness holds the IUT's PUT of the commit record and, meanwhile, reads the output from "
                   "index 0: that read must not return the round's tokens while the append is held (it waits, or "
                   "returns no tokens). After the release, a read returns them.",
)
async def output_after_record(ctx: VerifierContext) -> None:
    """While the commit-log append is held, output from 0 holds none of the round's tokens; afterwards it does."""
    session = await started(ctx)
    gate = ctx.cache.faults.hold(cache_path(session.commit_log), methods=frozenset({"PUT"}))
    proposal = asyncio.ensure_future(ctx.propose(session, ctx.greedy(session, 2), held_s=HOLD_S))
    reader: asyncio.Future[Any] | None = None
    try:
        held = await gate.wait_arrival(HOLD_S * 2)
        ctx.require(held, "the round never reached its commit-log append", row="R-6.3-STEPS")
        reader = asyncio.ensure_future(ctx.output(session, 0, party="drafter-2"))
        done, _ = await asyncio.wait({reader}, timeout=HOLD_S)
        if done:
            early = reader.result()
            tokens = list(ctx.expect_ok(early, Output, what="GET output during the held append").tokens)
            ctx.check(not tokens, "output was released while the commit-log append was still held",
                      expected="no tokens", actual=str(tokens))
    finally:
        gate.open()
        if reader is not None and not reader.done():
            reader.cancel()
    verdict = ctx.expect_ok(await proposal, Verdict, what="POST proposals")
    after = ctx.expect_ok(await ctx.output(session, 0, party="drafter-2"), Output, what="GET output after the commit")
    ctx.check(list(after.tokens) == list(verdict.emitted), "the committed tokens are not served after the append",
              expected=str(list(verdict.emitted)), actual=str(list(after.tokens)))
