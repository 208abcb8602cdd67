"""The base and round checks (§6.3 step 4, §4.2, P1-ERR-2).

Each proposal is built on a prefix or round the harness knows to be wrong; the
409 must carry the current session-state, which the harness compares with its
own account (session, epoch, round, committed, d[n] recomputed from tokens).
A refused proposal must change nothing: the valid round follows.
"""

from __future__ import annotations

from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import check_stale_state, still_works

BASE = ('Base check: if base is not the committed length or base_digest is not d[base], respond 409 with problem type '
        '"sdcp-stale-base" and the current session-state, so that the drafter can resynchronize.')
ROUND = "If round is not the last round plus one, respond 409 likewise."
ERR2 = ("A 409 `sdcp-stale-base` (also used for a wrong round) carries the member `state`: the current session-state, "
        "with `session` and `digest` as base64url strings without padding and the other members as numbers.")
CHAIN = ("Because d[n] depends on every committed token, a proposal built on a different or outdated prefix is "
         "detected without comparing token lists.")


async def _after_round_one(ctx: VerifierContext) -> TrackedSession:
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1", count=2)
    return session


BASE_ROWS = ("R-6.3-STALE-BASE", "R-6.3-STALE-STATE", "P1-ERR-2/ENCODING")
ROUND_ROWS = ("R-6.3-STALE-ROUND", "R-6.3-STALE-STATE", "P1-ERR-2/ENCODING")


async def _stale(ctx: VerifierContext, session: TrackedSession, what: str, **overrides: Any) -> None:
    """Send the next round's greedy proposal with ``overrides``; expect 409 stale-base + state, then a valid round."""
    answer = await ctx.propose(session, ctx.greedy(session, 1), **overrides)
    check_stale_state(ctx, answer, session, what, row=ctx.case.primary_row)
    await still_works(ctx, session, f"the valid round after {what}")


@CATALOGUE.case("VER-6.3-STALE-BASE-001", area="stale-base", section="6.3", quote=f"{BASE} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=BASE_ROWS)
async def base_beyond_committed(ctx: VerifierContext) -> None:
    """base = n + 1 (with d[n]) is 409 sdcp-stale-base carrying the current state."""
    session = await _after_round_one(ctx)
    await _stale(ctx, session, "a base one beyond the committed length", base=len(session.output) + 1)


@CATALOGUE.case("VER-6.3-STALE-BASE-002", area="stale-base", section="6.3, 4.2", quote=f"{BASE} ... {CHAIN} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=BASE_ROWS)
async def forked_digest(ctx: VerifierContext) -> None:
    """The right base n with the digest of a forked prefix (last token changed) is 409 with the state."""
    session = await _after_round_one(ctx)
    forked = [*session.output[:-1], (session.output[-1] + 1) % 128]
    digest = extend_digest(session.d0, forked)
    await _stale(ctx, session, "the digest of a forked prefix", base_digest=digest)


@CATALOGUE.case("VER-6.3-STALE-BASE-003", area="stale-base", section="6.3, 4.2", quote=f"{BASE} ... {CHAIN} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=BASE_ROWS)
async def outdated_prefix(ctx: VerifierContext) -> None:
    """A drafter that missed round 1 (base 0, d[0]) proposing round 2 gets 409 with the state."""
    session = await _after_round_one(ctx)
    await _stale(ctx, session, "an outdated prefix (base 0, d[0])", base=0, base_digest=session.d0)


@CATALOGUE.case("VER-6.3-STALE-BASE-004", area="stale-base", section="6.3", quote=f"{BASE} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=BASE_ROWS)
async def wrong_d0(ctx: VerifierContext) -> None:
    """Before any round, base 0 with a digest that is not d[0] (all zero octets) is 409 with the state."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await _stale(ctx, session, "a base_digest that is not d[0]", base_digest=bytes(32))


@CATALOGUE.case("VER-6.3-STALE-BASE-005", area="stale-base", section="6.3", quote=f"{ROUND} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=ROUND_ROWS)
async def round_skips_ahead(ctx: VerifierContext) -> None:
    """Round last + 2 on the right base is 409 sdcp-stale-base with the state."""
    session = await _after_round_one(ctx)
    await _stale(ctx, session, "a round that skips one", round=session.round + 2)


@CATALOGUE.case("VER-6.3-STALE-BASE-006", area="stale-base", section="6.3", quote=f"{ROUND} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=ROUND_ROWS)
async def round_goes_back(ctx: VerifierContext) -> None:
    """Round 0 (which never has a verdict) on the right base after round 1 is 409 with the state."""
    session = await _after_round_one(ctx)
    await _stale(ctx, session, "round 0", round=0)


@CATALOGUE.case("VER-6.3-STALE-BASE-007", area="stale-base", section="6.3", quote=f"{ROUND} ... {ERR2}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=ROUND_ROWS)
async def first_round_not_one(ctx: VerifierContext) -> None:
    """Before any verdict, round 2 on base 0 and d[0] is 409 with the state (round 0, committed 0, d[0])."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await _stale(ctx, session, "round 2 as the first proposal", round=2)
