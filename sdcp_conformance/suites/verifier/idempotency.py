"""Idempotent rounds (§6.3 step 3 and Commit, §6.9 Lost messages, P1-IDEM-1).

The stored verdict of a round must come back unchanged to every later
proposal for that round; copies of one request sent at once must all get the
one verdict, and the commit log must hold exactly one record for the round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.context import CaseContext, TrackedSession
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier._common_a import commit_records, still_works

IDEMPOTENCY = ("Idempotency: if a verdict for this round already exists, return it unchanged; if the round is being "
               "verified for an identical earlier request, wait for that verdict and return it.")
ATOMIC = ("The commit and the recording of the verdict MUST be atomic with respect to concurrent proposals for the "
          "session.")
LOST = ("Lost messages: proposals and their verdicts are idempotent per round, so a drafter retries a proposal whose "
        "verdict it did not receive.")


def _same_verdict(ctx: CaseContext, answer: Answer, stored: Verdict, what: str) -> None:
    """``answer`` must carry exactly the stored verdict (members; differing bytes are only noted)."""
    verdict = ctx.expect_ok(answer, Verdict, what=what)
    ctx.require(verdict == stored, f"{what}: the verdict differs from the stored verdict of round {stored.round}",
                expected=str(stored.to_obj()), actual=str(verdict.to_obj()))
    if answer.body != stored.to_cbor():
        ctx.note(f"{what}: same members, different encoding of the verdict")


def _one_record(ctx: CaseContext, session: TrackedSession, round_number: int) -> None:
    records = [record for record in commit_records(ctx, session) if record.get("round") == round_number]
    ctx.require(len(records) == 1, f"the commit log holds {len(records)} records for round {round_number}",
                expected="exactly 1", actual=str(records))


async def _round_one(ctx: CaseContext, session: TrackedSession, count: int = 2) -> tuple[dict[str, Any], Verdict]:
    """Round 1 with the greedy tokens: its proposal body and its (checked) verdict."""
    body = ctx.proposal(session, ctx.greedy(session, count))
    answer = await ctx.send_proposal(body)
    verdict = ctx.expect_ok(answer, Verdict, what="round 1")
    ctx.apply_verdict(session, verdict)
    return body, verdict


async def _opened(ctx: CaseContext) -> TrackedSession:
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    return session


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-001", area="idempotency", section="6.3, 6.9", quote=f"{IDEMPOTENCY} ... {LOST}",
                level=Level.MUST)
async def exact_retry(ctx: CaseContext) -> None:
    """The identical proposal re-sent after its verdict gets that verdict again; the log has one record."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    _same_verdict(ctx, await ctx.send_proposal(body), stored, "the exact retry of round 1")
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 2 after the retry")


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-002", area="idempotency", section="6.3", quote=IDEMPOTENCY, level=Level.MUST,
                profile=("P1-IDEM-1",))
async def retry_with_other_status(ctx: CaseContext) -> None:
    """A retry that differs only in its status member gets the stored verdict."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    status: Mapping[str, Any] = {**body["status"], "load": 90, "queue": 7, "accept_milli": 333}
    _same_verdict(ctx, await ctx.send_proposal({**body, "status": status}), stored, "a retry with another status")
    _one_record(ctx, session, 1)


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-003", area="idempotency", section="6.3", quote=f"{IDEMPOTENCY} ... {ATOMIC}",
                level=Level.MUST)
async def concurrent_identical(ctx: CaseContext) -> None:
    """Three identical copies of round 1 sent at once all get the same verdict; the log has one record."""
    session = await _opened(ctx)
    body = ctx.proposal(session, ctx.greedy(session, 3))
    answers = await asyncio.gather(*(ctx.send_proposal(body) for _ in range(3)))
    first = ctx.expect_ok(answers[0], Verdict, what="copy 1 of round 1")
    ctx.apply_verdict(session, first)
    for number, answer in enumerate(answers[1:], start=2):
        _same_verdict(ctx, answer, first, f"copy {number} of round 1")
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 2 after the concurrent copies")


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-004", area="idempotency", section="6.3, 6.9", quote=f"{IDEMPOTENCY} ... {LOST}",
                level=Level.MUST)
async def retry_after_moving_on(ctx: CaseContext) -> None:
    """Round 1 re-sent after round 2 committed gets round 1's stored verdict, and round 3 still follows round 2.

    Round 2 is a rejected (low) round, so the session's counters changed since
    round 1: a verifier that re-renders the stored verdict with its current
    ``low``, ``m_cap`` or ``load`` no longer returns it "unchanged"."""
    session = await _opened(ctx)
    body, stored = await _round_one(ctx, session)
    wrong = (ctx.greedy(session, 1)[0] + 1) % ctx.mock(session.model).vocab_size
    low_round = await ctx.propose_ok(session, [wrong])
    ctx.require(low_round.accepted == 0, "round 2 proposed a non-greedy token and must accept none")
    _same_verdict(ctx, await ctx.send_proposal(body), stored, "round 1 re-sent after round 2")
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 3 after the late retry")


@CATALOGUE.case("VER-6.3-IDEMPOTENCY-005", area="idempotency", section="6.3", quote=IDEMPOTENCY, level=Level.MUST,
                profile=("P1-IDEM-1",))
async def different_proposal_after_verdict(ctx: CaseContext) -> None:
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
    level=Level.MUST, profile=("P1-IDEM-1",),
    black_box_note="Whether the second proposal arrives while the first is in flight is a race the harness cannot "
                   "control; both outcomes the profile allows are accepted (409 sdcp-stale-base, or the stored "
                   "verdict).",
)
async def concurrent_different(ctx: CaseContext) -> None:
    """Two different proposals for round 1 at once: one verdict, the other gets it too or 409; one record."""
    session = await _opened(ctx)
    greedy = ctx.greedy(session, 2)
    bodies = [ctx.proposal(session, greedy), ctx.proposal(session, [(greedy[0] + 1) % 128])]
    answers = await asyncio.gather(*(ctx.send_proposal(body) for body in bodies))
    verdicts = [ctx.expect_ok(answer, Verdict, what="round 1") for answer in answers if answer.ok]
    ctx.require(bool(verdicts), "neither concurrent proposal for round 1 got a verdict",
                actual=", ".join(answer.describe() for answer in answers))
    for answer in answers:
        if answer.ok:
            _same_verdict(ctx, answer, verdicts[0], "the concurrent proposals for round 1")
    ctx.apply_verdict(session, verdicts[0])
    _one_record(ctx, session, 1)
    await still_works(ctx, session, "round 2")
    odd = [answer.describe() for answer in answers
           if not answer.ok and not (answer.status == 409 and answer.problem_type is ProblemType.STALE_BASE)]
    if odd:
        ctx.non_strict(f"a concurrent different proposal got {odd[0]}",
                       expected=["the stored verdict", "409 sdcp-stale-base"], actual=odd[0])
