"""Judgements shared by the verifier cases of part A (transport … limits); declares no case.

Each helper computes what it expects from the harness's own tracked session
(digests recomputed from tokens, greedy tokens from the oracle) and never asks
reference code what it would do.
"""

from __future__ import annotations

import base64
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.context import CaseContext, TrackedSession
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.protocol.problems import ProblemType


def expect_refused(ctx: CaseContext, answer: Answer, problem: ProblemType, what: str, *,
                   strict: bool = True) -> None:
    """The request must be refused, ideally with ``problem``.

    Accepting it (2xx), crashing (5xx) or dropping the exchange fails when the
    draft makes the refusal itself a requirement (``strict``); a refusal with
    another 4xx status or problem type only deviates from the problem type
    Table 2 / the profile names, which is NON-STRICT.
    """
    expected = f"{problem.status} {problem.suffix}"
    if answer.status == problem.status and answer.problem_type is problem:
        return
    message = f"{what}: expected {expected}, got {answer.describe()}"
    if answer.status is not None and 400 <= answer.status < 500:
        ctx.non_strict(message + " (refused, but not with the problem type the draft/profile names)",
                       expected=[expected], actual=answer.describe())
    if strict:
        ctx.fail(message, expected=[expected], actual=answer.describe())
    ctx.non_strict(message, expected=[expected], actual=answer.describe())


def commit_records(ctx: CaseContext, session: TrackedSession) -> list[dict[str, Any]]:
    """The commit records (not fences) of the session's log, as the harness's cache holds them."""
    return [record for record in ctx.read_log(session) if isinstance(record, dict) and "round" in record]


def append_fence(ctx: CaseContext, session: TrackedSession, epoch: int) -> None:
    """Play the router of §6.9: append a fence record ``{epoch}`` to the session's commit log directly."""
    name = session.commit_log.removeprefix(ctx.cache_uri(""))
    stored = ctx.env.cache.store.get(_path(session.commit_log), now=0.0)
    before = stored.data if stored is not None else b""
    ctx.put_object(name, before + encode({"epoch": epoch}))
    ctx.note(f"appended a fence record {{epoch: {epoch}}} to {session.commit_log}")


async def still_works(ctx: CaseContext, session: TrackedSession, what: str, count: int = 1) -> Verdict:
    """After a refused request nothing changed: the next valid round at the tracked state is verified."""
    tokens = ctx.greedy(session, count + 1)
    answer = await ctx.propose(session, tokens[:count])
    if not answer.ok:
        ctx.fail(f"{what}: afterwards a valid proposal for round {session.round + 1} at base "
                 f"{len(session.output)} was refused ({answer.describe()}), so the refused request changed "
                 "the session", actual=answer.describe())
    verdict = session.verdicts[session.round]
    ctx.require(list(verdict.emitted) == tokens, f"{what}: the follow-up round did not commit the greedy tokens",
                expected=str(tokens), actual=str(list(verdict.emitted)))
    return verdict


def check_stale_state(ctx: CaseContext, answer: Answer, session: TrackedSession, what: str,
                      level: Level = Level.MUST) -> None:
    """§6.3 base check: 409 sdcp-stale-base carrying the current session-state (P1-ERR-2 encoding)."""
    expect_refused(ctx, answer, ProblemType.STALE_BASE, what, strict=level.strict)
    problem = answer.problem
    state = problem.state if problem is not None else None
    if state is None:
        ctx.non_strict(f"{what}: the 409 carries no `state` member (P1-ERR-2), so the drafter cannot resynchronize "
                       "from it as §6.3 intends", expected=["state: current session-state"],
                       actual=answer.body[:300].decode("utf-8", "replace"))
    expected = {"session": session.id, "epoch": session.epoch, "round": session.round,
                "committed": len(session.output), "digest": session.digest}
    wrong = {key: state.get(key) for key, value in expected.items() if state.get(key) != value}
    if wrong:
        shown = {key: _show(value) for key, value in expected.items()}
        ctx.fail(f"{what}: the 409's state is not the current session-state: {_show_map(wrong)}",
                 expected=[str(shown)], actual=str(_show_map(state)))


def _show(value: Any) -> Any:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode() if isinstance(value, bytes) else value


def _show_map(values: dict[str, Any]) -> dict[str, Any]:
    return {key: _show(value) for key, value in values.items()}


def _path(uri: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(uri).path

