"""Stop tokens and max_new (§6.3 Acceptance, §6.5.2 finish, P1-CTL-5, P1-STATE-1, P1-EVT-1).

Greedy paths are computed by the oracle; each case picks a prompt whose first
greedy tokens are distinct, so a stop token occurs exactly where intended.
"""

from __future__ import annotations

from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import (
    check_event_origin,
    current_state,
    distinct_greedy_prompt,
    started,
    wait_event,
)

TRUNCATE_QUOTE = "It truncates the emitted tokens after the first stop token and at max_new."


TRUNC_ROW = "R-6.3-TRUNCATE"


def _require(ctx: VerifierContext, verdict: Verdict, emitted: list[int], action: int) -> None:
    ctx.check(list(verdict.emitted) == emitted and int(verdict.action) == action,
              f"round {verdict.round}: expected emitted {emitted} and action {action}", row=TRUNC_ROW,
              expected=f"emitted {emitted}, action {action}",
              actual=f"emitted {list(verdict.emitted)}, action {int(verdict.action)}")


async def _one_round(ctx: VerifierContext, greedy: int, proposed: int, emitted: int, action: int, *,
                     stop_at: int | None = None, **contract: Any) -> tuple[TrackedSession, Verdict]:
    """A session over a prompt whose first ``greedy`` greedy tokens are distinct (the greedy token at ``stop_at`` its
    stop token, if given), the first ``proposed`` of them proposed: the first ``emitted`` come back, with
    ``action``."""
    prompt, path = distinct_greedy_prompt(greedy)
    if stop_at is not None:
        contract["stop"] = [path[stop_at]]
    session = await started(ctx, prompt=prompt, **contract)
    verdict = await ctx.propose_ok(session, path[:proposed])
    _require(ctx, verdict, path[:emitted], action)
    return session, verdict


@CATALOGUE.case("VER-6.3-TRUNC-001", area="truncation", section="6.3, 6.5.2",
                level=Level.MUST, rows=(TRUNC_ROW,))
async def stop_inside_proposal(ctx: VerifierContext) -> None:
    """A stop token at proposed position 2 (accepted): emitted ends with it, action finish."""
    await _one_round(ctx, 6, proposed=4, emitted=2, action=4, stop_at=1)


@CATALOGUE.case("VER-6.3-TRUNC-002", area="truncation", section="6.3, 6.5.2",
                level=Level.MUST, rows=(TRUNC_ROW,))
async def stop_is_additional_token(ctx: VerifierContext) -> None:
    """The additional token is the stop token: it is emitted and the session finishes."""
    await _one_round(ctx, 6, proposed=2, emitted=3, action=4, stop_at=2)


@CATALOGUE.case("VER-6.3-TRUNC-003", area="truncation", section="6.3, 6.5.2",
                level=Level.MUST, rows=(TRUNC_ROW,))
async def max_new_mid_round(ctx: VerifierContext) -> None:
    """max_new 3 with four tokens proposed: three are emitted and the session finishes."""
    await _one_round(ctx, 6, proposed=4, emitted=3, action=4, max_new=3)


@CATALOGUE.case("VER-6.3-TRUNC-004", area="truncation", section="6.3, 6.5.2",
                level=Level.MUST, rows=(TRUNC_ROW,))
async def max_new_second_round(ctx: VerifierContext) -> None:
    """max_new 5 reached in round 2: only the two remaining tokens are emitted, committed = 5."""
    prompt, path = distinct_greedy_prompt(9)
    session = await started(ctx, prompt=prompt, max_new=5)
    first = await ctx.propose_ok(session, path[:2])
    _require(ctx, first, path[:3], 0)
    verdict = await ctx.propose_ok(session, path[3:7])
    _require(ctx, verdict, path[3:5], 4)
    ctx.check(verdict.committed == 5, f"committed {verdict.committed} exceeds or misses max_new 5")


@CATALOGUE.case("VER-6.3-TRUNC-005", area="truncation", section="6.3", quote=TRUNCATE_QUOTE, level=Level.MUST,
                rows=(TRUNC_ROW,))
async def stop_only_in_rejected_part(ctx: VerifierContext) -> None:
    """A stop token proposed after the first rejected position is not emitted and ends nothing."""
    prompt, path = distinct_greedy_prompt(8)
    stop = next(t for t in range(3, 128) if t not in path)
    session = await started(ctx, prompt=prompt, stop=[stop])
    verdict = await ctx.propose_ok(session, [path[0], stop, stop])
    _require(ctx, verdict, path[:2], 0)


@CATALOGUE.case(
    "VER-6.3-TRUNC-006", area="truncation", section="6.3", level=Level.PROFILE, profile=("P1-CTL-5",),
    rows=("P1-CTL-5/ACCEPTED", TRUNC_ROW),
)
async def accepted_before_truncation(ctx: VerifierContext) -> None:
    """A round cut by a stop token reports the rule's a (4), not the number of kept tokens."""
    _, verdict = await _one_round(ctx, 6, proposed=4, emitted=2, action=4, stop_at=1)
    ctx.check(verdict.accepted == 4, f"accepted is {verdict.accepted}; P1-CTL-5 reports a before truncation (4)",
              expected="accepted 4", actual=f"accepted {verdict.accepted}")


@CATALOGUE.case(
    "VER-6.3-TRUNC-007", area="truncation", section="6.5.2", level=Level.PROFILE,
    profile=("P1-STATE-1", "P1-MSG-5"), rows=("P1-STATE-1", TRUNC_ROW),
)
async def finished_state(ctx: VerifierContext) -> None:
    """After a stop token the session-state (idempotent session-open) says 4, finished."""
    session, _ = await _one_round(ctx, 6, proposed=3, emitted=1, action=4, stop_at=0)
    state = await current_state(ctx, session)
    ctx.check_state(session, state, "session-state after finish")
    ctx.check(state.state == 4, f"session-state.state is {state.state} after finish (P1-STATE-1: 4)",
              expected="state 4", actual=f"state {state.state}")


@CATALOGUE.case(
    "VER-6.3-TRUNC-008", area="truncation", section="6.5.2", level=Level.PROFILE, profile=("P1-EVT-1",),
    rows=("P1-EVT-1/EVENTS",), listens=("router",),
)
async def finish_event(ctx: VerifierContext) -> None:
    """Finishing posts an event of kind 4 with the final committed length and digest to the router."""
    session = await started(ctx, max_new=2)
    await ctx.propose_ok(session, ctx.greedy(session, 1))
    events = await wait_event(ctx, session, 4, timeout_s=5.0)
    if not ctx.check(bool(events), "no event of kind 4 reached the router within 5 s (P1-EVT-1)"):
        return
    peer, event = events[0]
    check_event_origin(ctx, peer, "the finish event")
    ctx.check(event.committed == len(session.output) and event.digest == session.digest,
              "the finish event's committed/digest are not the session's final n and d[n]", row="R-4.2-CHAIN")
