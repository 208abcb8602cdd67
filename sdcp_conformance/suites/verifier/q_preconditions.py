"""Rule 2's preconditions (§6.3 "Preconditions of the rule", §6.4, P1-Q-1).

The verifier must hold q rows for every proposed position, and check that
q[i](x[i]) is not zero, before drawing any random value; otherwise the round
ends without a verdict and commits nothing. Each case then sends a valid
proposal for the same round and requires exactly the seeded outcome, which
shows the refused round left no trace.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import numpy as np

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import cache_path, require_nothing_committed, started
from sdcp_conformance.suites.verifier.seeded_rule2 import (
    RULE2_ROWS,
    DraftedProposal,
    Rule2Judge,
    draft_q,
    p_row,
    publish,
    rule2_round,
    sample_proposal,
)

SAMPLING = {"temperature_milli": 1000, "top_k": 3}
ZERO_QUOTE = ("a proposal for which q[i](x[i]) is zero is rejected, before any random draw, with problem type "
              "\"sdcp-bad-proposal\".")
RETRY_NOTE = ("Whether a random value was drawn cannot be seen; the case checks that nothing was committed and "
              "that a valid proposal for the same round then gets exactly the seeded outcome.")


async def seeded_session(ctx: VerifierContext) -> tuple[TrackedSession, dict[str, int]]:
    sampling = {**SAMPLING, "seed": ctx.rng.randrange(1, 2**63)}
    return await started(ctx, rule=2, sampling=dict(sampling), max_new=200), sampling


UNAVAILABLE_ROW = "R-6.3-Q-UNAVAILABLE"
ZERO_ROW = "R-6.4-ZERO-Q"


async def then_valid_round(ctx: VerifierContext, session: TrackedSession, sampling: dict[str, int]) -> None:
    """The refused round had no verdict: a valid proposal for it now gets exactly the seeded outcome."""
    require_nothing_committed(ctx, session, "after the refused proposal")
    judge = Rule2Judge(ctx)
    await rule2_round(ctx, session, judge, draft_q("bigram-draft-near", SAMPLING), 3, sampling)
    judge.finish()


def _drafted(ctx: VerifierContext, session: TrackedSession, m: int = 3) -> DraftedProposal:
    return sample_proposal(ctx, session, draft_q("bigram-draft-near", SAMPLING), m)


async def _unavailable(ctx: VerifierContext,
                       send: Callable[[TrackedSession, DraftedProposal], Awaitable[Answer]]) -> None:
    session, sampling = await seeded_session(ctx)
    answer = await send(session, _drafted(ctx, session))
    ctx.expect_refusal(answer, UNAVAILABLE_ROW, what="a proposal whose q rows cannot be obtained")
    await then_valid_round(ctx, session, sampling)


@CATALOGUE.case(
    "VER-6.3-QPRE-001", area="q-preconditions", section="6.3, 6.4", level=Level.MUST,
    profile=("P1-Q-1",), rows=(UNAVAILABLE_ROW, *RULE2_ROWS),
    black_box_note="Without a q_rows member the verifier cannot obtain the rows, so §6.3 names the refusal: "
                   "409 sdcp-q-unavailable (P1-Q-1 says the same); another answer is FAILED.",
)
async def no_q_rows(ctx: VerifierContext) -> None:
    """Rule 2 proposal without q_rows: 409 sdcp-q-unavailable, nothing committed, the round still open."""
    async def send(session: TrackedSession, proposal: DraftedProposal) -> Answer:
        return await ctx.propose(session, proposal.tokens)
    await _unavailable(ctx, send)


@CATALOGUE.case(
    "VER-6.3-QPRE-002", area="q-preconditions", section="6.3", level=Level.MUST,
    profile=("P1-Q-1",), rows=(UNAVAILABLE_ROW, *RULE2_ROWS),
    black_box_note=RETRY_NOTE,
)
async def q_object_missing(ctx: VerifierContext) -> None:
    """q_rows names an object the cache does not hold (404): q-unavailable, then the round succeeds."""
    async def send(session: TrackedSession, proposal: DraftedProposal) -> Answer:
        return await ctx.propose(session, proposal.tokens, q_rows=ctx.cache_uri(f"absent-{session.id.hex()}"))
    await _unavailable(ctx, send)


async def _faulted(ctx: VerifierContext, arm: Callable[[str], int]) -> None:
    async def send(session: TrackedSession, proposal: DraftedProposal) -> Answer:
        uri = publish(ctx, session, proposal)
        fault = arm(cache_path(uri))
        try:
            return await ctx.propose(session, proposal.tokens, q_rows=uri)
        finally:
            ctx.cache.faults.disarm(fault)
    await _unavailable(ctx, send)


@CATALOGUE.case(
    "VER-6.3-QPRE-003", area="q-preconditions", section="6.3", level=Level.MUST,
    profile=("P1-Q-1",), rows=(UNAVAILABLE_ROW, *RULE2_ROWS),
    black_box_note=RETRY_NOTE + " The cache answers 503 to every GET of the rows meanwhile.",
)
async def q_object_unreadable(ctx: VerifierContext) -> None:
    """Every GET of the q rows fails with 503: q-unavailable, nothing committed, then the round succeeds."""
    await _faulted(ctx, lambda path: ctx.cache.faults.fail_gets(path, 100, status=503))


@CATALOGUE.case(
    "VER-6.3-QPRE-004", area="q-preconditions", section="6.3", level=Level.MUST,
    profile=("P1-Q-1",), rows=(UNAVAILABLE_ROW, *RULE2_ROWS),
    black_box_note=RETRY_NOTE + " Every GET of the rows is reset meanwhile.",
)
async def q_object_reset(ctx: VerifierContext) -> None:
    """Every GET of the q rows is reset mid-stream: q-unavailable, nothing committed, then the round succeeds."""
    await _faulted(ctx, lambda path: ctx.cache.faults.transport_gets(path, 100))


@CATALOGUE.case(
    "VER-6.3-QPRE-005", area="q-preconditions", section="6.4", quote=ZERO_QUOTE, level=Level.MUST,
    rows=(ZERO_ROW, *RULE2_ROWS), black_box_note=RETRY_NOTE,
)
async def zero_q_first(ctx: VerifierContext) -> None:
    """q[1](x[1]) = 0: 422 sdcp-bad-proposal, nothing committed, the round then gets the seeded outcome."""
    session, sampling = await seeded_session(ctx)
    proposal = _drafted(ctx, session)
    proposal.q[0][proposal.tokens[0]] = 0.0
    answer = await ctx.propose(session, proposal.tokens, q_rows=publish(ctx, session, proposal, "-zero"))
    ctx.expect_refusal(answer, ZERO_ROW, what="a proposal with q[1](x[1]) = 0")
    await then_valid_round(ctx, session, sampling)


@CATALOGUE.case(
    "VER-6.3-QPRE-006", area="q-preconditions", section="6.3, 6.4",
    quote="checked that q[i](x[i]) is not zero for every position, before drawing any random value",
    level=Level.MUST, rows=(ZERO_ROW, *RULE2_ROWS),
    black_box_note="x[1] lies outside top-k (p = 0), so it is rejected whatever r is: a verifier that checks q "
                   "lazily while evaluating positions stops at x[1] and never sees the zero at x[3]. " + RETRY_NOTE,
)
async def zero_q_after_certain_rejection(ctx: VerifierContext) -> None:
    """q[3](x[3]) = 0 behind a certain rejection at x[1]: still 422, nothing committed."""
    session, sampling = await seeded_session(ctx)
    p1 = p_row(session.model, session.context, SAMPLING)
    outside = next(t for t in range(3, 128) if p1[t] == 0.0)
    proposal = _drafted(ctx, session)
    tokens = [outside, *proposal.tokens[1:]]
    rows = [[1.0 / 128] * 128, *proposal.q[1:]]
    rows[2][tokens[2]] = 0.0
    answer = await ctx.propose(session, tokens, q_rows=publish(ctx, session, DraftedProposal(tokens, rows), "-zero"))
    ctx.expect_refusal(answer, ZERO_ROW, what="a proposal with q[3](x[3]) = 0")
    await then_valid_round(ctx, session, sampling)


def _corrupt_case(case_id: str, title: str, mutate: Callable[[DraftedProposal], bytes], row: str,
                  note: str, *, quote: str | None = None) -> None:
    """Declare one case: a malformed q_rows object is refused as ``row`` says, nothing committed."""

    async def run(ctx: VerifierContext) -> None:
        session, sampling = await seeded_session(ctx)
        proposal = _drafted(ctx, session)
        uri = ctx.put_object(f"q-bad-{session.id.hex()[:8]}", mutate(proposal))
        answer = await ctx.propose(session, proposal.tokens, q_rows=uri)
        ctx.expect_refusal(answer, row, what=title)
        if not answer.ok:
            await then_valid_round(ctx, session, sampling)

    run.__doc__ = f"{title}: 422 sdcp-bad-proposal (P1-Q-1), nothing committed."
    level = Level.MUST if row == EVERY_POSITION_ROW else Level.PROFILE
    CATALOGUE.case(
        case_id, area="q-preconditions", section="5.2, 6.3", quote=quote, level=level, profile=("P1-Q-1",),
        black_box_note=note,
        rows=(row, *RULE2_ROWS),
    )(run)


EVERY_POSITION_ROW = "R-6.3-Q-EVERY-POSITION"
BAD_ROWS_ROW = "P1-Q-1/BAD-ROWS"


def _blob(rows: list[list[float]]) -> bytes:
    return np.asarray(rows, dtype="<f4").tobytes()


def _with_value(value: float) -> Callable[[DraftedProposal], bytes]:
    """Put ``value`` in row 1 at a token that was not proposed (the drawn x[i] stay positive)."""
    def mutate(proposal: DraftedProposal) -> bytes:
        rows = [list(row) for row in proposal.q]
        victim = next(t for t in range(3, 128) if t not in proposal.tokens)
        rows[0][victim] = value
        return _blob(rows)
    return mutate


def _short(proposal: DraftedProposal) -> bytes:
    return _blob(proposal.q[:-1])


_corrupt_case("VER-6.3-QPRE-007", "q_rows holding one row fewer than M", _short, EVERY_POSITION_ROW,
              "Rows for the last position are missing, so accepting the proposal breaks §6.3's MUST (FAILED); "
              "refusing it with 422 sdcp-bad-proposal (P1-Q-1) or 409 sdcp-q-unavailable (§6.3, the rows cannot "
              "be obtained) passes, another refusal is NON-STRICT.",
              quote="an object of the wrong size or holding negative, NaN or infinite values gets 422 "
                    "`sdcp-bad-proposal`.")
_corrupt_case("VER-6.3-QPRE-008", "q_rows holding a NaN", _with_value(math.nan), BAD_ROWS_ROW,
              "The draft does not say what a NaN row means; only P1-Q-1 decides (NON-STRICT on deviation).")
_corrupt_case("VER-6.3-QPRE-009", "q_rows holding a negative value", _with_value(-0.25), BAD_ROWS_ROW,
              "Only P1-Q-1 decides (NON-STRICT on deviation).")
_corrupt_case("VER-6.3-QPRE-010", "q_rows holding an infinite value", _with_value(math.inf), BAD_ROWS_ROW,
              "Only P1-Q-1 decides (NON-STRICT on deviation).")


def _oversized(proposal: DraftedProposal) -> bytes:
    return _blob(proposal.q) + b"\x00\x00\x80\x3f"


_corrupt_case("VER-6.3-QPRE-011", "q_rows with four octets too many", _oversized, BAD_ROWS_ROW,
              "Only P1-Q-1 decides (NON-STRICT on deviation).")
