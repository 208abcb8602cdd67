"""Idempotent rounds (§6.3 step 3 and Commit, §6.9 Lost messages, P1-IDEM-1).

The stored verdict of a round must come back unchanged to every later
proposal for that round; copies of one request sent while the round is being
verified must all get the one verdict, and the commit log must hold exactly
one record for the round. The harness plays the MLC, so it holds the IUT's
commit-log append to keep a verification in flight for as long as a case
needs: "in flight" is then a fact, not a race.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import cache_path, commit_records, still_works

IDEMPOTENCY = ("Idempotency: if a verdict for this round already exists, return it unchanged; if the round is being "
               "verified for an identical earlier request, wait for that verdict and return it.")
ATOMIC = ("The commit and the recording of the verdict MUST be atomic with respect to concurrent proposals for the "
          "session.")
LOST = ("Lost messages: proposals and their verdicts are idempotent per round, so a drafter retries a proposal whose "
        "verdict it did not receive.")


IDEM_ROW = "R-6.3-IDEMPOTENCY"
IDENTICAL_ROW = "P1-IDEM-1/IDENTICAL"
HELD_S = 5.0
"""How long a case waits for an answer it expects while the first request's append is held."""


def _same_verdict(ctx: VerifierContext, answer: Answer, stored: Verdict, what: str, *, row: str = IDEM_ROW) -> None:
    """``answer`` must carry exactly the stored verdict (members; differing bytes are only noted)."""
    if not ctx.check(answer.ok, f"{what}: expected the stored verdict of round {stored.round}, got "
                     f"{answer.describe()}", row=row, expected="the stored verdict", actual=answer.describe()):
        return
    verdict = ctx.expect_ok(answer, Verdict, what=what)
    ctx.check(verdict == stored, f"{what}: the verdict differs from the stored verdict of round {stored.round}",
              row=row, expected=str(stored.to_obj()), actual=str(verdict.to_obj()))
    if answer.body != stored.to_cbor():
        ctx.note(f"{what}: same members, different encoding of the verdict")


def _one_record(ctx: VerifierContext, session: TrackedSession, round_number: int, *, row: str = IDEM_ROW) -> None:
    records = [record for record in commit_records(ctx, session) if record.get("round") == round_number]
    ctx.check(len(records) == 1, f"the commit log holds {len(records)} records for round {round_number}",
              row=row, expected="exactly 1", actual=str(records))


async def _round_one(ctx: VerifierContext, session: TrackedSession, count: int = 2) -> tuple[dict[str, Any], Verdict]:
    """Round 1 with the greedy tokens: its proposal body and its (checked) verdict."""
    body = ctx.proposal(session, ctx.greedy(session, count))
    answer = await ctx.send_proposal(body)
    verdict = ctx.expect_ok(answer, Verdict, what="round 1")
    ctx.apply_verdict(session, verdict)
    return body, verdict


async def _opened(ctx: VerifierContext) -> TrackedSession:
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    return session


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-001", area="idempotency", section="6.3, 6.9", quote=f"{IDEMPOTENCY} ... {LOST}",
                level=Level.MUST, rows=(IDEM_ROW, "R-6.9-LOST"))
async def exact_retry(ctx: VerifierContext) -> None:
    """The identical proposal re-sent after its verdict gets that verdict again; the log has one record."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    _same_verdict(ctx, await ctx.send_proposal(body), stored, "the exact retry of round 1")
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 2 after the retry")


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-002", area="idempotency", section="6.3", level=Level.MUST,
                profile=("P1-IDEM-1",), rows=(IDEM_ROW,))
async def retry_with_other_status(ctx: VerifierContext) -> None:
    """A retry that differs only in its status member gets the stored verdict."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    status: Mapping[str, Any] = {**body["status"], "load": 90, "queue": 7, "accept_milli": 333}
    _same_verdict(ctx, await ctx.send_proposal({**body, "status": status}), stored, "a retry with another status")
    _one_record(ctx, session, 1)


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-003", area="idempotency", section="6.3", quote=f"{IDEMPOTENCY} ... {ATOMIC}",
                level=Level.MUST, profile=("P1-IDEM-1",), rows=(IDEM_ROW, "R-6.3-ATOMIC", IDENTICAL_ROW),
                black_box_note="The harness holds the IUT's commit-log append of round 1 until the copies were "
                               "sent, so they certainly arrive while the round is being verified. Only P1-IDEM-1 "
                               "says that a copy with another status member is identical: a verifier that does not "
                               "wait for the verdict with it deviates from the profile alone (NON-STRICT).")
async def concurrent_identical(ctx: VerifierContext) -> None:
    """Copies of round 1 sent while its append is held (two byte for byte, one with another status) all get the
    one verdict; the log has one record."""
    session = await _opened(ctx)
    body = ctx.proposal(session, ctx.greedy(session, 3))
    other_status = {**body, "status": {**body["status"], "load": 90, "queue": 7}}
    gate = ctx.cache.faults.hold(cache_path(session.commit_log), methods=frozenset({"PUT"}))
    first = asyncio.ensure_future(ctx.send_proposal(body, held_s=HELD_S))
    try:
        if not await gate.wait_arrival(HELD_S):
            gate.open()
            ctx.fail("round 1 never reached its commit-log append", row="R-6.3-STEPS",
                     actual=(await first).describe())
        copies = [asyncio.ensure_future(ctx.send_proposal(copy)) for copy in (body, body, other_status)]
        await asyncio.wait(copies, timeout=0.2)  # let the copies reach the IUT; an early answer is judged below
    finally:
        gate.open()
    answers = [await first, *[await copy for copy in copies]]
    stored = ctx.expect_ok(answers[0], Verdict, what="copy 1 of round 1")
    ctx.apply_verdict(session, stored)
    for number, answer in enumerate(answers[1:3], start=2):
        _same_verdict(ctx, answer, stored, f"copy {number} of round 1, sent while round 1 was being verified")
    _same_verdict(ctx, answers[3], stored, "copy 4 of round 1 (another status member: identical by P1-IDEM-1), "
                  "sent while round 1 was being verified", row=IDENTICAL_ROW)
    _one_record(ctx, session, 1, row="R-6.3-ATOMIC")
    await still_works(ctx, session, "round 2 after the concurrent copies")


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-004", area="idempotency", section="6.3, 6.9", quote=f"{IDEMPOTENCY} ... {LOST}",
                level=Level.MUST, rows=(IDEM_ROW, "R-6.9-LOST"))
async def retry_after_moving_on(ctx: VerifierContext) -> None:
    """Round 1 re-sent after round 2 committed gets round 1's stored verdict, and round 3 still follows round 2.

    Round 2 is a rejected (low) round, so the session's counters changed since
    round 1: a verifier that re-renders the stored verdict with its current
    ``low``, ``m_cap`` or ``load`` no longer returns it "unchanged"."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    wrong = (ctx.greedy(session, 1)[0] + 1) % ctx.mock(session.model).vocab_size
    low_round = await ctx.propose_ok(session, [wrong])
    ctx.require(low_round.accepted == 0, "round 2 proposed a non-greedy token and must accept none",
                row="R-6.3-STEPS")
    _same_verdict(ctx, await ctx.send_proposal(body), stored, "round 1 re-sent after round 2")
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 3 after the late retry")


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-005", area="idempotency", section="6.3", level=Level.MUST,
                profile=("P1-IDEM-1",), rows=(IDEM_ROW,))
async def different_proposal_after_verdict(ctx: VerifierContext) -> None:
    """A different proposal (other tokens) for round 1 after its verdict gets the stored verdict unchanged."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    other = [(token + 1) % 128 for token in body["tokens"]] + [7]
    _same_verdict(ctx, await ctx.send_proposal({**body, "tokens": other}), stored,
                  "a different proposal for round 1 after its verdict")
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 2")


@CATALOGUE.case(
    "VER-6.3-IDEMPOTENCY-006", area="idempotency", section="6.3",
    quote=f"{ATOMIC} ... A different proposal for a round whose verification is in flight gets 409 `sdcp-stale-base`; "
          "once the verdict exists, any proposal for that round gets the stored verdict",
    level=Level.MUST, profile=("P1-IDEM-1",), rows=("R-6.3-ATOMIC", "P1-IDEM-1/IN-FLIGHT", IDEM_ROW),
    black_box_note="The harness holds the IUT's commit-log append of the first proposal, so the second, different "
                   "one certainly arrives while round 1 is in flight (P1-IDEM-1: 409 sdcp-stale-base); after the "
                   "append is released, the different proposal gets the stored verdict (§6.3).",
)
async def concurrent_different(ctx: VerifierContext) -> None:
    """A different proposal while round 1 is in flight: 409 stale-base; after the verdict, the stored verdict."""
    session = await _opened(ctx)
    greedy = ctx.greedy(session, 2)
    first_body, other_body = ctx.proposal(session, greedy), ctx.proposal(session, [(greedy[0] + 1) % 128])
    gate = ctx.cache.faults.hold(cache_path(session.commit_log), methods=frozenset({"PUT"}))
    first = asyncio.ensure_future(ctx.send_proposal(first_body, held_s=HELD_S))
    try:
        if not await gate.wait_arrival(HELD_S):
            gate.open()
            ctx.fail("round 1 never reached its commit-log append", row="R-6.3-STEPS",
                     actual=(await first).describe())
        other = asyncio.ensure_future(ctx.send_proposal(other_body))
        done, _ = await asyncio.wait({other}, timeout=HELD_S)
    finally:
        gate.open()
    stored = ctx.expect_ok(await first, Verdict, what="round 1")
    ctx.apply_verdict(session, stored)
    during = await other
    if done:
        ctx.expect_refusal(during, "P1-IDEM-1/IN-FLIGHT", what="a different proposal while round 1 was in flight")
    else:
        ctx.deviate("P1-IDEM-1/IN-FLIGHT", f"a different proposal while round 1 was in flight was not answered "
                    f"within {HELD_S:.0f} s (it waited for round 1's verdict instead of 409 sdcp-stale-base)",
                    expected=["409 sdcp-stale-base"], actual=during.describe())
        if during.ok:
            _same_verdict(ctx, during, stored, "the different proposal answered after round 1's verdict")
    _same_verdict(ctx, await ctx.send_proposal(other_body), stored,
                  "the different proposal re-sent once round 1 has its verdict")
    _one_record(ctx, session, 1, row="R-6.3-ATOMIC")
    await still_works(ctx, session, "round 2")
