"""Bugs planted in the reference drafter's session machine and in its draft model (the sampling bugs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.contract import RULE_SPECULATIVE_SAMPLING
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Assignment, SessionState, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.sampling import draw_token, target_distribution
from sdcp_conformance.reference.drafter.ports import Problem, QRows
from sdcp_conformance.reference.drafter.session import (
    STOPPING_ACTIONS,
    DrafterIdentity,
    DrafterSession,
    Next,
    check_assignment,
)

# ---------------------------------------------------------------------- the session machine


class ContinuesAfterSwitch(DrafterSession):
    """Treats switch like continue: it goes on proposing for a session the router is moving elsewhere."""

    stopping = STOPPING_ACTIONS - {Action.SWITCH}


class FailActionIgnored(DrafterSession):
    """Leaves a failed session to the verifier to close: fail (and any unknown action, §5.2) does not stop it."""

    stopping = STOPPING_ACTIONS - {Action.FAIL}


class MCapIgnoredOnReduce(DrafterSession):
    """Takes m_cap from continue verdicts only: after reduce it keeps the larger limit it had."""

    def on_verdict(self, verdict: Verdict) -> Next:
        before = self.m_cap
        step = super().on_verdict(verdict)
        if verdict.action is Action.REDUCE:
            self.m_cap = before
        return step


class KeepsRejectedDraft(DrafterSession):
    """Its draft state is not rolled back: it goes on drafting from its own token at the first rejected position."""

    kept: int | None = None

    def on_verdict(self, verdict: Verdict) -> Next:
        proposal = self.outstanding
        step = super().on_verdict(verdict)
        self.kept = None
        if proposal is not None and verdict.accepted < len(proposal.tokens):
            self.kept = proposal.tokens[verdict.accepted]
        return step

    @property
    def context(self) -> tuple[int, ...]:
        if self.kept is None or not self.output:
            return (*self.prompt, *self.output)
        return (*self.prompt, *self.output[:-1], self.kept)


class KeepsRejectedPositions(DrafterSession):
    """Never rolls its draft context back: after a verdict the rejected positions stay in the context it drafts from,
    and the emitted additional token is appended after them (a draft KV cache extended, never truncated). With a
    draft model whose next token depends on the last token alone it drafts what a correct drafter drafts."""

    kept: tuple[tuple[int, tuple[int, ...]], ...] = ()
    """(output length before them, the rejected tokens) of every verdict that rejected some."""

    def on_verdict(self, verdict: Verdict) -> Next:
        proposal, before = self.outstanding, len(self.output)
        step = super().on_verdict(verdict)
        at = before + verdict.accepted
        if proposal is not None and len(self.output) > at and verdict.accepted < len(proposal.tokens):
            self.kept = (*self.kept, (at, tuple(proposal.tokens[verdict.accepted:])))
        return step

    @property
    def context(self) -> tuple[int, ...]:
        tokens, done = list(self.prompt), 0
        for at, rejected in self.kept:
            tokens += [*self.output[done:at], *rejected]
            done = at
        return (*tokens, *self.output[done:])


class StaleContextSession(DrafterSession):
    """Drafts from a context that still holds an abandoned proposal (``stale``: the output length it was proposed
    on, and its tokens) before the tokens committed since."""

    stale: tuple[int, tuple[int, ...]] | None = None

    @property
    def context(self) -> tuple[int, ...]:
        if self.stale is None:
            return (*self.prompt, *self.output)
        at, tokens = self.stale
        return (*self.prompt, *self.output[:at], *tokens, *self.output[at:])


class ResyncKeepsStaleDraft(StaleContextSession):
    """On sdcp-stale-base its refused proposal stays in its draft context, before the committed tokens it reads
    back (P1-DRF-6: it resynchronises the prefix it proposes on, not what it drafts from)."""

    def on_problem(self, problem: Problem) -> Next:
        proposal, at = self.outstanding, len(self.output)
        step = super().on_problem(problem)
        if proposal is not None and problem.type is ProblemType.STALE_BASE:
            self.stale = (at, tuple(proposal.tokens))
        return step


class DraftsFromPrompt(DrafterSession):
    """Drafts every round from the prompt alone, as if nothing had been committed (a context built once at the
    assignment): its base and digest are right, its tokens are not the greedy continuation of the prefix."""

    @property
    def context(self) -> tuple[int, ...]:
        return tuple(self.prompt)


class ResyncDigestUnchecked(DrafterSession):
    """Adopts the committed tokens it reads back without comparing them with the state's digest; it extends its
    own digest with them instead."""

    def accepts_resync(self, tokens: Sequence[int], target: SessionState) -> bool:
        return len(self.output) + len(tokens) == target.committed

    def adopted_digest(self, tokens: Sequence[int], target: SessionState) -> bytes:
        return extend_digest(self.digest, tokens)


class ResyncKeepsRound(DrafterSession):
    """After a resynchronisation it keeps its own round count instead of the state's."""

    def apply_resync(self, tokens: Sequence[int]) -> Next:
        before = self.round
        step = super().apply_resync(tokens)
        self.round = before
        return step


class StaleBaseStops(DrafterSession):
    """Gives up on sdcp-stale-base instead of resynchronising (P1-DRF-6)."""

    def on_stale_base(self, state: SessionState | None) -> Next:
        self.outstanding = None
        return self.stop("stale base")


class IgnoresDraftersListSession(DrafterSession):
    """The session side of :class:`~sdcp_conformance.mutants.drafter_apps.IgnoresDraftersList`."""

    @staticmethod
    def validate(assignment: Assignment, identity: DrafterIdentity) -> None:
        check_assignment(assignment.replace(contract=assignment.contract.replace(drafters=None)), identity)


# ---------------------------------------------------------------------- the draft model (rule 2)


class _TokenChoice:
    """A draft model that drafts position by position through the real one and plants a bug in each choice."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def vocab_size(self) -> int:
        return int(self.inner.vocab_size)

    @property
    def model_sha256(self) -> bytes:
        return bytes(self.inner.model_sha256)

    @property
    def tokenizer_sha256(self) -> bytes:
        return bytes(self.inner.tokenizer_sha256)

    def forget(self, session_key: bytes) -> None:
        self.inner.forget(session_key)

    def draft(self, session_key: bytes, context: tuple[int, ...], m: int, sampling: Mapping[str, int] | None,
              rule: int, rng: np.random.Generator) -> tuple[tuple[int, ...], QRows | None]:
        if rule != RULE_SPECULATIVE_SAMPLING:
            return self.inner.draft(session_key, context, m, sampling, rule, rng)  # type: ignore[no-any-return]
        tokens: list[int] = []
        rows = np.empty((m, self.vocab_size), dtype=np.float32)
        for position in range(m):
            here = (*context, *tokens)
            drawn, published = self.inner.draft(session_key, here, 1, sampling, rule, rng)
            token, row = self.choose(session_key, here, published[0], int(drawn[0]), sampling, rng)
            rows[position] = row
            tokens.append(token)
        return tuple(tokens), rows

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        raise NotImplementedError


class GreedyInsteadOfSampled(_TokenChoice):
    """Publishes its rows but proposes each row's most probable token."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        return int(np.argmax(row)), row


class SamplesUntempered(_TokenChoice):
    """Publishes the rows of the sampling profile but draws from the untempered distribution (temperature 1)."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        untempered, _ = self.inner.draft(session_key, context, 1, None, RULE_SPECULATIVE_SAMPLING, rng)
        return int(untempered[0]), row


class RowsShifted(_TokenChoice):
    """Publishes each position's row one position late: the row it stores for x[i] is the one after x[i]."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        _, after = self.inner.draft(session_key, (*context, drawn), 1, sampling, RULE_SPECULATIVE_SAMPLING, rng)
        return drawn, after[0]


class SamplesTargetP(_TokenChoice):
    """Publishes its own rows but draws from the target's p (an MTP head wired to the wrong distribution)."""

    target = "bigram"

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        p = target_distribution(bigram_logits(context[-1], self.target), sampling, RULE_SPECULATIVE_SAMPLING)
        return draw_token(p, float(rng.random())), row


class MedianToken(_TokenChoice):
    """Draws every token with the same uniform, 0.5: a fixed token per row (the row's median)."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        return draw_token(row.astype(np.float64), 0.5), row


__all__ = [
    "ContinuesAfterSwitch",
    "DraftsFromPrompt",
    "FailActionIgnored",
    "GreedyInsteadOfSampled",
    "IgnoresDraftersListSession",
    "KeepsRejectedDraft",
    "KeepsRejectedPositions",
    "MCapIgnoredOnReduce",
    "MedianToken",
    "ResyncDigestUnchecked",
    "ResyncKeepsRound",
    "ResyncKeepsStaleDraft",
    "RowsShifted",
    "SamplesTargetP",
    "SamplesUntempered",
    "StaleBaseStops",
    "StaleContextSession",
]
