"""The harness's side of ordinary verifier conversations, shared by the cases; declares no case.

Opening and assigning sessions, the valid round that shows an earlier request
(refused, or accepted) left the session able to go on, the 409 state check, the commit log as the harness's cache
holds it, events at the harness's router, finished and failed sessions, and
output checks. Each helper computes what it expects from the harness's own
tracked session (digests recomputed from tokens, greedy tokens from the
oracle) and never asks reference code what it would do.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.harness.contexts.verifier import DEFAULT_PROMPT, TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.oracle.greedy import argmax_smallest, greedy_continuation, next_logits
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Event, Output, SessionState, Verdict
from sdcp_conformance.protocol.problems import ProblemType

# ---------------------------------------------------------------------- sessions


async def started(ctx: VerifierContext, model: str = "bigram", *, prompt: Sequence[int] = DEFAULT_PROMPT,
                  m_init: int = 4, drafter: str = "drafter-1", **contract: Any) -> TrackedSession:
    """Open a session with ``contract`` overrides and assign ``drafter`` (§6.1), both checked."""
    session = await ctx.open_ok(model, ctx.contract(model, **contract), prompt)
    await ctx.assign_ok(session, drafter, m_init=m_init)
    return session


async def still_works(ctx: VerifierContext, session: TrackedSession, what: str, count: int = 1, *,
                      earlier: str = "the requests before it", limit_row: str | None = None) -> Verdict:
    """The session still goes on: the next valid round at the tracked state is verified (§6.3).

    ``earlier`` names the request this round follows and what became of it, as the case saw it ("the refused
    proposal of M = 4", "the accepted PUT …/drafter with m_init 0"): a finding quotes it, and P1-JUDGE-4 has
    findings never call an accepted request refused (the default names no outcome, for callers that do not
    say). P1-JUDGE-2: a refusal that committed anyway, or left the session unable to go on, is FAILED here
    whatever the refusal looked like; so is a session that an accepted request left unable to go on.
    ``limit_row``: the case computed that ``count`` is within the limit, so a 422 ``sdcp-limit`` for this round is
    a wrong limit, judged there, not a changed session.
    """
    tokens = ctx.greedy(session, count + 1)
    answer = await ctx.propose(session, tokens[:count])
    if not answer.ok and limit_row is not None and answer.problem_type is ProblemType.LIMIT:
        ctx.fail(f"{what}: a valid proposal of M = {count} for round {session.round + 1} {answer.refused()}, "
                 "though M is within the limit", row=limit_row, expected=[f"a verdict for M = {count}"],
                 actual=answer.describe())
    if not answer.ok:
        ctx.fail(f"{what}: afterwards a valid proposal for round {session.round + 1} at base "
                 f"{len(session.output)} {answer.refused()}, so {earlier} left the session unable to go on from "
                 "the state the IUT's own answers gave it",
                 row="R-6.3-STEPS", actual=answer.describe())
    verdict = session.verdicts[session.round]
    ctx.check(list(verdict.emitted) == tokens, f"{what}: the follow-up round did not commit the greedy tokens",
              row="R-6.3-STEPS", expected=str(tokens), actual=str(list(verdict.emitted)))
    return verdict


def outcome(answer: Answer) -> str:
    """What became of a request, for ``still_works(earlier=…)``: ``was accepted (200)``, ``was refused (…)`` or
    ``was not answered (…)`` (P1-JUDGE-3, P1-JUDGE-4: neither a timeout nor an acceptance is called a refusal)."""
    return f"was accepted ({answer.status})" if answer.ok else answer.refused()


def state_of(ctx: VerifierContext, answer: Answer, what: str) -> SessionState:
    return ctx.expect_ok(answer, SessionState, what=what)


async def current_state(ctx: VerifierContext, session: TrackedSession) -> SessionState:
    """The IUT's session-state, through an idempotent repeat of session-open (P1-MSG-5)."""
    return state_of(ctx, await ctx.open(session), "POST sessions (idempotent repeat)")


def rejecting_token(session: TrackedSession, avoid: Sequence[int] = ()) -> int:
    """A token that is not the greedy next token after the tracked prefix, nor in ``avoid``."""
    best = argmax_smallest(next_logits(session.model, session.context))
    banned = {best, *avoid, *session.contract.get("stop", [])}
    return next(token for token in range(3, 128) if token not in banned)


def distinct_greedy_prompt(length: int) -> tuple[tuple[int, ...], list[int]]:
    """A bigram prompt whose first ``length`` greedy tokens are distinct non-special tokens."""
    for last in range(3, 128):
        prompt = (5, 9, last)
        path = greedy_continuation("bigram", prompt, length)
        if len(set(path)) == length and min(path) >= 3:
            return prompt, path
    raise AssertionError("the bigram table has no such prompt")


# ---------------------------------------------------------------------- refusals with a state


def check_stale_state(ctx: VerifierContext, answer: Answer, session: TrackedSession, what: str, *,
                      row: str = "R-6.3-STALE-BASE", state_row: str = "R-6.3-STALE-STATE",
                      encoding_row: str = "P1-ERR-2/ENCODING") -> None:
    """409 sdcp-stale-base carrying the current session-state (§6.3 base check, P1-ERR-2 encoding).

    P1-JUDGE-1: "a 409 without it is FAILED" where the draft demands the
    state (``state_row``, R-6.3-STALE-STATE); its encoding is the profile's
    (``encoding_row``, NON-STRICT), so a state in another encoding is decoded
    leniently and its values still judged. A policy's 409 (P1-POL-1) passes
    profile-level rows.
    """
    if not ctx.expect_refusal(answer, row, what=what):
        return
    problem = answer.problem
    raw = problem.members.get("state") if problem is not None else None
    if raw is None:
        ctx.deviate(state_row, f"{what}: the 409 carries no `state` member, so the drafter cannot resynchronize "
                    "from it as §6.3 intends", expected=["state: the current session-state"],
                    actual=answer.body[:300].decode("utf-8", "replace"))
        return
    state = problem.state if problem is not None else None
    if state is None:
        state = _lenient_state(raw)
        ctx.deviate(encoding_row, f"{what}: the 409's state is not in P1-ERR-2's encoding (base64url strings for "
                    "session and digest, numbers for the rest)", actual=str(raw)[:300])
    expected = {"session": session.id, "epoch": session.epoch, "round": session.round,
                "committed": len(session.output), "digest": session.digest}
    wrong = {key: state.get(key) for key, value in expected.items() if state.get(key) != value}
    if wrong:
        ctx.deviate(state_row, f"{what}: the 409's state is not the current session-state: {_show_map(wrong)}",
                    expected=[str(_show_map(expected))], actual=str(_show_map(state)))


def _lenient_state(raw: Any) -> dict[str, Any]:
    """A state map in any plausible encoding (bytes, hex or padded base64 for session and digest)."""
    if not isinstance(raw, dict):
        return {}
    state = dict(raw)
    for key in ("session", "digest"):
        value = state.get(key)
        if isinstance(value, str):
            state[key] = _decode_text(value)
    return state


def _decode_text(text: str) -> bytes | str:
    try:
        return bytes.fromhex(text)
    except ValueError:
        pass
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_" if "-" in text or "_" in text else None)
    except ValueError:
        return text


def _show(value: Any) -> Any:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode() if isinstance(value, bytes) else value


def _show_map(values: dict[str, Any]) -> dict[str, Any]:
    return {key: _show(value) for key, value in values.items()}


# ---------------------------------------------------------------------- the commit log


def cache_path(uri: str) -> str:
    return urlsplit(uri).path


def commit_records(ctx: VerifierContext, session: TrackedSession) -> list[dict[str, Any]]:
    """The commit records (not fences) of the session's log, as the harness's cache holds it (P1-LOG-1)."""
    return [record for record in ctx.read_log(session) if isinstance(record, dict) and "round" in record]


def require_nothing_committed(ctx: VerifierContext, session: TrackedSession, what: str, *,
                              row: str = "R-6.3-STEPS") -> None:
    """"commits nothing": the log holds no record past the rounds the harness saw."""
    later = [record for record in commit_records(ctx, session) if record.get("round", 0) > session.round]
    ctx.check(not later, f"{what}: the commit log holds a record for a round without a verdict", row=row,
              expected=f"no record after round {session.round}", actual=str(later))


def append_fence(ctx: VerifierContext, session: TrackedSession, epoch: int) -> None:
    """Play the router of §6.9: append a fence record ``{epoch}`` to the session's commit log directly."""
    name = session.commit_log.removeprefix(ctx.cache_uri(""))
    stored = ctx.cache.store.get(cache_path(session.commit_log), now=0.0)
    before = stored.data if stored is not None else b""
    ctx.put_object(name, before + encode({"epoch": epoch}))
    ctx.note(f"appended a fence record {{epoch: {epoch}}} to {session.commit_log}")


# ---------------------------------------------------------------------- events at the harness's router


def events_of(ctx: VerifierContext, session: TrackedSession, kind: int | None = None) -> list[tuple[str | None, Event]]:
    return [(peer, event) for peer, event in ctx.router.events
            if event.session == session.id and (kind is None or int(event.kind) == kind)]


async def wait_event(ctx: VerifierContext, session: TrackedSession, kind: int, *, timeout_s: float = 10.0,
                     count: int = 1) -> list[tuple[str | None, Event]]:
    """Wait (bounded) until the router listener holds ``count`` events of ``kind`` for the session."""
    await ctx.router.wait_for(lambda: len(events_of(ctx, session, kind)) >= count, timeout_s)
    return events_of(ctx, session, kind)


SELF_DECODING_STALL_S = 10.0
"""D-JUDGE-SLOW-SELF: how long a self-decoding period may go without a new commit record before the harness stops
waiting for the event that ends it. A period of n tokens takes n passes of the target model; a slow engine
(a second a pass) is conformant, so the wait follows the commits, not a fixed time."""
SELF_DECODING_CAP_S = 120.0
"""The longest the harness waits for a self-decoding period's end, however steadily it commits."""


async def wait_event_while_committing(ctx: VerifierContext, session: TrackedSession, kinds: Sequence[int], *,
                                      count: int = 1) -> list[tuple[str | None, Event]]:
    """Wait until the router listener holds ``count`` events of one of ``kinds`` for the session, for as long as
    the verifier keeps appending commit records (self-decoding: one per token, §6.5.2), each record giving it
    another :data:`SELF_DECODING_STALL_S`; at most :data:`SELF_DECODING_CAP_S`, and no longer than the session
    lasts (an event 4 or 5 ends it). The events of the kinds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SELF_DECODING_CAP_S

    def ended() -> list[tuple[str | None, Event]]:
        return [seen for kind in kinds for seen in events_of(ctx, session, kind)]

    def over() -> bool:
        return len(ended()) >= count or any(int(event.kind) in (4, 5) for _, event in events_of(ctx, session))

    records = len(commit_records(ctx, session))
    while True:
        window = min(SELF_DECODING_STALL_S, deadline - loop.time())
        if window <= 0 or await ctx.router.wait_for(over, window):
            return ended()
        now = len(commit_records(ctx, session))
        if now == records:  # nothing committed in a whole window: the period stalled (or never ends)
            return ended()
        records = now


def check_event_origin(ctx: VerifierContext, peer: str | None, what: str, *, row: str | None = None) -> None:
    """P1-ID-1: the event comes from the IUT's own certificate identity."""
    ctx.check(peer == ctx.target.base_uri, f"{what} was posted by {peer!r}, not by the verifier", row=row,
              expected=ctx.target.base_uri, actual=str(peer))


# ---------------------------------------------------------------------- finished and failed sessions


@dataclass(frozen=True)
class Ended:
    """A session that finished or failed in its last round, with that round's proposal body and verdict."""

    session: TrackedSession
    verdict: Verdict
    body: dict[str, Any]


async def _one_round(ctx: VerifierContext, session: TrackedSession,
                     tokens: list[int]) -> tuple[Verdict, dict[str, Any]]:
    body = ctx.proposal(session, tokens)
    verdict = ctx.expect_ok(await ctx.send_proposal(body), Verdict, what="POST proposals")
    ctx.apply_verdict(session, verdict)
    return verdict, body


async def finished_session(ctx: VerifierContext) -> Ended:
    """A session that finished at max_new (3 tokens) in its first round (§6.3 truncation, §6.5.2 finish)."""
    session = await started(ctx, max_new=3)
    verdict, body = await _one_round(ctx, session, ctx.greedy(session, 2))
    ctx.require(int(verdict.action) == 4 and verdict.committed == 3,
                "a round reaching max_new must finish the session (§6.3 Acceptance, §6.5.2 finish)",
                row="R-6.3-STEPS", expected="action 4, committed 3",
                actual=f"action {int(verdict.action)}, committed {verdict.committed}")
    return Ended(session, verdict, body)


async def failed_session(ctx: VerifierContext) -> Ended:
    """A session that failed: fallback [fail], R = 1, and a round with a = 0 (§6.5.2)."""
    session = await started(ctx, low_rounds=1, fallback=[5])
    verdict, body = await _one_round(ctx, session, [rejecting_token(session)])
    ctx.require(int(verdict.action) == 5, "a low round with fallback [fail] and R = 1 must fail the session",
                row="R-6.3-STEPS", expected="action 5", actual=f"action {int(verdict.action)}")
    return Ended(session, verdict, body)


# ---------------------------------------------------------------------- output


def check_output(ctx: VerifierContext, session: TrackedSession, output: Output, start: int, what: str, *,
                 row: str | None = None) -> None:
    """§6.7: the committed tokens from index ``start``, the session epoch on the message."""
    ctx.check(output.session == session.id, f"{what}: the output names another session", row="R-5.1-RESOURCES")
    ctx.check(output.epoch == session.epoch, f"{what}: the output carries epoch {output.epoch}, not the session "
              f"epoch {session.epoch}", row=row, expected=str(session.epoch), actual=str(output.epoch))
    ctx.check(output.from_ == start, f"{what}: the output's from is {output.from_}, not {start}", row=row)
    expected = session.output[start:]
    ctx.check(list(output.tokens) == expected, f"{what}: the output from index {start} is not the committed "
              "tokens from that index", row=row, expected=str(expected), actual=str(list(output.tokens)))


__all__ = [
    "Ended",
    "append_fence",
    "cache_path",
    "check_event_origin",
    "check_output",
    "check_stale_state",
    "commit_records",
    "current_state",
    "distinct_greedy_prompt",
    "events_of",
    "failed_session",
    "finished_session",
    "outcome",
    "rejecting_token",
    "require_nothing_committed",
    "started",
    "state_of",
    "still_works",
    "wait_event",
    "wait_event_while_committing",
]
