"""Helpers shared by the part-B verifier cases (q preconditions to recovery); declares no case.

Everything here computes expectations from first principles: the bigram
closed form or the torch runtime through :mod:`sdcp_conformance.oracle`, the
plain-Python rule 2 of :mod:`sdcp_conformance.oracle.rule2`, and the digest
chain the tracked session recomputes. Nothing asks reference code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.context import DEFAULT_PROMPT, CaseContext, TrackedSession
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.greedy import argmax_smallest, greedy_continuation, next_logits
from sdcp_conformance.protocol.messages import Event, Output, SessionState, Verdict
from sdcp_conformance.protocol.problems import ProblemType

Row = list[float]
QSource = Callable[[Sequence[int]], Row]
"""A draft distribution for the next token after a context (prompt + output + drafted tokens)."""


# ---------------------------------------------------------------------- sessions


async def started(ctx: CaseContext, model: str = "bigram", *, prompt: Sequence[int] = DEFAULT_PROMPT,
                  m_init: int = 4, drafter: str = "drafter-1", **contract: Any) -> TrackedSession:
    """Open a session with ``contract`` overrides and assign ``drafter`` (§6.1), both checked."""
    session = await ctx.open_ok(model, ctx.contract(model, **contract), prompt)
    await ctx.assign_ok(session, drafter, m_init=m_init)
    return session


def commit_records(ctx: CaseContext, session: TrackedSession) -> list[dict[str, Any]]:
    """The commit records (not fences) of the session's log (P1-LOG-1)."""
    return [record for record in ctx.read_log(session) if isinstance(record, dict) and "round" in record]


def require_nothing_committed(ctx: CaseContext, session: TrackedSession, what: str) -> None:
    """§6.3: "commits nothing": the log holds no record past the rounds the harness saw."""
    records = commit_records(ctx, session)
    later = [record for record in records if record.get("round", 0) > session.round]
    ctx.require(not later, f"{what}: the commit log holds a record for a round without a verdict",
                expected=f"no record after round {session.round}", actual=str(later))


def refused(ctx: CaseContext, answer: Answer, problem: ProblemType, *, level: Level, what: str) -> None:
    """A refusal is required (a 2xx is FAILED); the exact problem type is judged at ``level``."""
    if answer.ok:
        ctx.fail(f"{what}: the IUT accepted it (expected {problem.status} {problem.suffix})",
                 expected=[f"{problem.status} {problem.suffix}"], actual=answer.describe())
    ctx.expect_problem(answer, problem, level=level, what=what)


def state_of(ctx: CaseContext, answer: Answer, what: str) -> SessionState:
    return ctx.expect_ok(answer, SessionState, what=what)


async def current_state(ctx: CaseContext, session: TrackedSession) -> SessionState:
    """The IUT's session-state, through an idempotent repeat of session-open (P1-MSG-5)."""
    return state_of(ctx, await ctx.open(session), "POST sessions (idempotent repeat)")


def rejecting_token(session: TrackedSession, avoid: Sequence[int] = ()) -> int:
    """A token that is not the greedy next token after the tracked prefix, nor in ``avoid``."""
    best = argmax_smallest(next_logits(session.model, session.context))
    banned = {best, *avoid, *session.contract.get("stop", [])}
    return next(token for token in range(3, 128) if token not in banned)


# ---------------------------------------------------------------------- events


def events_of(ctx: CaseContext, session: TrackedSession, kind: int | None = None) -> list[tuple[str | None, Event]]:
    return [(peer, event) for peer, event in ctx.env.inbox.events
            if event.session == session.id and (kind is None or int(event.kind) == kind)]


async def wait_event(ctx: CaseContext, session: TrackedSession, kind: int, *, timeout_s: float = 10.0,
                     count: int = 1) -> list[tuple[str | None, Event]]:
    """Wait (bounded) until the router listener holds ``count`` events of ``kind`` for the session."""
    await ctx.env.inbox.wait_for(lambda: len(events_of(ctx, session, kind)) >= count, timeout_s)
    return events_of(ctx, session, kind)


def check_event_origin(ctx: CaseContext, peer: str | None, what: str) -> None:
    """P1-ID-1: the event comes from the IUT's own certificate identity."""
    ctx.require(peer == ctx.env.config.base_uri, f"{what} was posted by {peer!r}, not by the verifier",
                expected=ctx.env.config.base_uri, actual=str(peer))


# ---------------------------------------------------------------------- rule 2


def p_row(model: str, context: Sequence[int], sampling: Mapping[str, int] | None) -> Row:
    """§4.1 target distribution p after ``context`` under a sampling profile (rule 2)."""
    return oracle.distribution(next_logits(model, context).tolist(), sampling, 2)


def as_published(row: Sequence[float]) -> Row:
    """The values a verifier reads back from a binary32 q row (§5.2)."""
    return [float(value) for value in np.asarray(row, dtype=np.float32)]


def target_q(model: str, sampling: Mapping[str, int] | None) -> QSource:
    """q = p: the drafter is the target itself."""
    return lambda context: p_row(model, context, sampling)


def draft_q(draft_model: str, sampling: Mapping[str, int] | None) -> QSource:
    """q from a mock draft model's closed form under the same profile."""
    return lambda context: p_row(draft_model, context, sampling)


def flat_q(context: Sequence[int]) -> Row:
    """A uniform draft over the vocabulary (a poor drafter)."""
    del context
    return [1.0 / 128] * 128


def avoiding_q(model: str, sampling: Mapping[str, int] | None) -> QSource:
    """Mass concentrated where p is smallest: proposals the target rarely wants."""
    def row(context: Sequence[int]) -> Row:
        p = p_row(model, context, sampling)
        order = sorted(range(len(p)), key=lambda token: (p[token], token))
        weights = [0.0] * len(p)
        for rank, token in enumerate(order[:8]):
            weights[token] = 8.0 - rank
        total = sum(weights)
        return [weight / total for weight in weights]
    return row


@dataclass(frozen=True)
class DraftedProposal:
    tokens: list[int]
    q: list[Row]
    """The rows as published (binary32 values)."""


def sample_proposal(ctx: CaseContext, session: TrackedSession, source: QSource, m: int) -> DraftedProposal:
    """The harness as drafter: sample each x[i] from exactly the row it publishes (§5.2), with its own RNG."""
    tokens: list[int] = []
    rows: list[Row] = []
    for _ in range(m):
        row = as_published(source([*session.context, *tokens]))
        tokens.append(oracle.draw(row, ctx.rng.random()))
        rows.append(row)
    return DraftedProposal(tokens, rows)


def expected_rule2(session: TrackedSession, proposal: DraftedProposal, sampling: Mapping[str, int],
                   round_number: int | None = None) -> oracle.Rule2Expectation:
    """§6.4 rule 2 with the seeded HMAC values (P1-SAMP-3 for i), from first principles."""
    tokens = proposal.tokens
    p_rows = [p_row(session.model, [*session.context, *tokens[:i]], sampling) for i in range(len(tokens) + 1)]
    number = session.round + 1 if round_number is None else round_number
    return oracle.rule2(p_rows, proposal.q, tokens, int(sampling["seed"]), session.id, number)


def publish(ctx: CaseContext, session: TrackedSession, proposal: DraftedProposal, label: str = "") -> str:
    return ctx.publish_q(f"q-{session.id.hex()[:8]}-{session.round + 1}{label}", np.asarray(proposal.q))


@dataclass
class Rule2Judge:
    """Collects the profile-level (drawn-token) deviations of a run of rounds; strict ones fail at once."""

    ctx: CaseContext
    drawn_mismatches: list[str] = field(default_factory=list)

    def judge(self, verdict: Verdict, proposal: DraftedProposal, expected: oracle.Rule2Expectation,
              support: Row) -> None:
        ctx, tokens = self.ctx, proposal.tokens
        a = expected.accepted
        ctx.require(verdict.accepted == a,
                    f"round {verdict.round}: rule 2 accepted {verdict.accepted} tokens; the seeded HMAC "
                    f"values (§6.4, P1-SAMP-3) accept {a}", expected=str(a), actual=str(verdict.accepted))
        emitted = list(verdict.emitted)
        ctx.require(len(emitted) == a + 1 and emitted[:a] == tokens[:a],
                    f"round {verdict.round}: emitted {emitted} is not the {a} accepted tokens plus one",
                    expected=f"{tokens[:a]} + [one drawn token]", actual=str(emitted))
        drawn = emitted[a]
        ctx.require(support[drawn] > 0.0,
                    f"round {verdict.round}: the additional token {drawn} lies outside the support of the "
                    "distribution it must be drawn from (residual max(0, p - q), or p[M+1])")
        if drawn != expected.emitted[a]:
            self.drawn_mismatches.append(f"round {verdict.round}: drew {drawn}, P1-SAMP-2 gives "
                                         f"{expected.emitted[a]}")

    def finish(self) -> None:
        if self.drawn_mismatches:
            self.ctx.non_strict("the acceptance decisions match; the drawn token does not follow P1-SAMP-2's "
                                "inverse CDF: " + "; ".join(self.drawn_mismatches))


def draw_support(session: TrackedSession, proposal: DraftedProposal, accepted: int,
                 sampling: Mapping[str, int]) -> Row:
    """The (unnormalized) distribution the additional token is drawn from (§6.4 rule 2)."""
    tokens = proposal.tokens
    p = p_row(session.model, [*session.context, *tokens[:accepted]], sampling)
    if accepted == len(tokens):
        return p
    rest = [max(0.0, a - b) for a, b in zip(p, proposal.q[accepted], strict=True)]
    return rest if sum(rest) > 0 else p


async def rule2_round(ctx: CaseContext, session: TrackedSession, judge: Rule2Judge, source: QSource, m: int,
                      sampling: Mapping[str, int]) -> Verdict:
    """One seeded rule-2 round: draft, publish, propose, and judge against the oracle."""
    proposal = sample_proposal(ctx, session, source, m)
    expected = expected_rule2(session, proposal, sampling)
    support = draw_support(session, proposal, expected.accepted, sampling)
    verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
    judge.judge(verdict, proposal, expected, support)
    return verdict


def cache_path(uri: str) -> str:
    return urlsplit(uri).path


# ---------------------------------------------------------------------- finished and failed sessions


def distinct_greedy_prompt(length: int) -> tuple[tuple[int, ...], list[int]]:
    """A bigram prompt whose first ``length`` greedy tokens are distinct non-special tokens."""
    for last in range(3, 128):
        prompt = (5, 9, last)
        path = greedy_continuation("bigram", prompt, length)
        if len(set(path)) == length and min(path) >= 3:
            return prompt, path
    raise AssertionError("the bigram table has no such prompt")


@dataclass(frozen=True)
class Ended:
    """A session that finished or failed in its last round, with that round's proposal body and verdict."""

    session: TrackedSession
    verdict: Verdict
    body: dict[str, Any]


async def _one_round(ctx: CaseContext, session: TrackedSession, tokens: list[int]) -> tuple[Verdict, dict[str, Any]]:
    body = ctx.proposal(session, tokens)
    verdict = ctx.expect_ok(await ctx.send_proposal(body), Verdict, what="POST proposals")
    ctx.apply_verdict(session, verdict)
    return verdict, body


async def finished_session(ctx: CaseContext) -> Ended:
    """A session that finished at max_new (3 tokens) in its first round."""
    session = await started(ctx, max_new=3)
    verdict, body = await _one_round(ctx, session, ctx.greedy(session, 2))
    ctx.require(int(verdict.action) == 4 and verdict.committed == 3,
                "a round reaching max_new must finish the session (§6.3 Acceptance, §6.5.2 finish)",
                expected="action 4, committed 3", actual=f"action {int(verdict.action)}, committed {verdict.committed}")
    return Ended(session, verdict, body)


async def failed_session(ctx: CaseContext) -> Ended:
    """A session that failed: fallback [fail], R = 1, and a round with a = 0."""
    session = await started(ctx, low_rounds=1, fallback=[5])
    verdict, body = await _one_round(ctx, session, [rejecting_token(session)])
    ctx.require(int(verdict.action) == 5, "a low round with fallback [fail] and R = 1 must fail the session",
                expected="action 5", actual=f"action {int(verdict.action)}")
    return Ended(session, verdict, body)


def check_output(ctx: CaseContext, session: TrackedSession, output: Output, start: int, what: str) -> None:
    """§6.7: tokens from index ``start``, the session epoch on the message."""
    ctx.require(output.session == session.id, f"{what}: the output names another session")
    ctx.require(output.epoch == session.epoch, f"{what}: the output carries epoch {output.epoch}, not the session "
                f"epoch {session.epoch}", expected=str(session.epoch), actual=str(output.epoch))
    ctx.require(output.from_ == start, f"{what}: the output's from is {output.from_}, not {start}")
    expected = session.output[start:]
    ctx.require(list(output.tokens) == expected, f"{what}: the output from index {start} is not the committed "
                "tokens from that index", expected=str(expected), actual=str(list(output.tokens)))


__all__ = [
    "DraftedProposal",
    "Ended",
    "QSource",
    "Row",
    "Rule2Judge",
    "as_published",
    "avoiding_q",
    "cache_path",
    "check_event_origin",
    "check_output",
    "commit_records",
    "current_state",
    "distinct_greedy_prompt",
    "draft_q",
    "draw_support",
    "events_of",
    "expected_rule2",
    "failed_session",
    "finished_session",
    "flat_q",
    "p_row",
    "publish",
    "refused",
    "rejecting_token",
    "require_nothing_committed",
    "rule2_round",
    "sample_proposal",
    "started",
    "state_of",
    "target_q",
    "wait_event",
]
