"""Bugs planted in the reference drafter's session machine and in its draft model (the sampling bugs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.mutants.drafter import CATALOGUE
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

_RESYNC = ("On `sdcp-stale-base` a drafter resynchronises from `state`, reading the committed tokens it lacks with "
           "`GET …/output` (any authenticated party may read output) and checking them against the digest")
_DISCARD = ("After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
            "ones")
EXACT = "The drafter MUST sample each proposed token from exactly the row it publishes."

# ---------------------------------------------------------------------- the session machine


@CATALOGUE.mutant("drf-continues-after-switch", "actions", "treats switch like continue", "6.5.2",
                  "the current drafter MUST stop proposing for the session.")
class ContinuesAfterSwitch(DrafterSession):
    """Treats switch like continue: it goes on proposing for a session the router is moving elsewhere."""

    stopping = STOPPING_ACTIONS - {Action.SWITCH}


@CATALOGUE.mutant("drf-fail-action-ignored", "actions", "fail (and so an unknown action) does not stop it",
                  "5.2, 6.5.2", 'A receiver that encounters an unknown action value MUST treat it as "fail".')
class FailActionIgnored(DrafterSession):
    """Leaves a failed session to the verifier to close: fail (and any unknown action, §5.2) does not stop it."""

    stopping = STOPPING_ACTIONS - {Action.FAIL}


@CATALOGUE.mutant("drf-m-cap-ignored-on-reduce", "proposal", "after a reduce verdict it keeps its larger limit",
                  "6.2, 6.5.2", "generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from "
                  "the last verdict (m_init before the first).")
class MCapIgnoredOnReduce(DrafterSession):
    """Takes m_cap from continue verdicts only: after reduce it keeps the larger limit it had."""

    def on_verdict(self, verdict: Verdict) -> Next:
        before = self.m_cap
        step = super().on_verdict(verdict)
        if verdict.action is Action.REDUCE:
            self.m_cap = before
        return step


@CATALOGUE.mutant("drf-keeps-rejected-draft", "discard", "keeps drafting from its own token at the first rejected "
                  "position instead of the verifier's", "6.3", _DISCARD)
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


@CATALOGUE.mutant("drf-keeps-rejected-positions", "discard", "keeps the rejected positions in its draft context and "
                  "appends the verifier's additional token after them (a KV cache never truncated): invisible with a "
                  "bigram draft model", "6.3", _DISCARD)
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


@CATALOGUE.mutant("drf-resync-keeps-stale-draft", "resync", "after sdcp-stale-base its refused proposal stays in its "
                  "draft context, before the committed tokens it reads back: invisible with a bigram draft model",
                  "P1-DRF-6", _RESYNC, profile_only=True)
class ResyncKeepsStaleDraft(StaleContextSession):
    """On sdcp-stale-base its refused proposal stays in its draft context, before the committed tokens it reads
    back (P1-DRF-6: it resynchronises the prefix it proposes on, not what it drafts from)."""

    def on_problem(self, problem: Problem) -> Next:
        proposal, at = self.outstanding, len(self.output)
        step = super().on_problem(problem)
        if proposal is not None and problem.type is ProblemType.STALE_BASE:
            self.stale = (at, tuple(proposal.tokens))
        return step


@CATALOGUE.mutant("drf-drafts-from-prompt", "discard", "drafts every round from the prompt alone, ignoring the "
                  "committed tokens (no draft state kept: P1-DRF-4's deviation, not §6.3's)", "P1-DRF-4",
                  "Under rule 1 a drafter proposes its own greedy tokens and publishes no `q_rows`.", profile_only=True)
class DraftsFromPrompt(DrafterSession):
    """Drafts every round from the prompt alone, as if nothing had been committed (a context built once at the
    assignment): its base and digest are right, its tokens are not the greedy continuation of the prefix."""

    @property
    def context(self) -> tuple[int, ...]:
        return tuple(self.prompt)


@CATALOGUE.mutant("drf-resync-digest-unchecked", "resync", "adopts the tokens it reads back without comparing them "
                  "with the state's digest (it extends its own digest with them)", "P1-DRF-6, 4.2", _RESYNC)
class ResyncDigestUnchecked(DrafterSession):
    """Adopts the committed tokens it reads back without comparing them with the state's digest; it extends its
    own digest with them instead."""

    def accepts_resync(self, tokens: Sequence[int], target: SessionState) -> bool:
        return len(self.output) + len(tokens) == target.committed

    def adopted_digest(self, tokens: Sequence[int], target: SessionState) -> bytes:
        return extend_digest(self.digest, tokens)


@CATALOGUE.mutant("drf-resync-keeps-round", "resync", "after a resynchronisation it keeps its own round count", "6.2",
                  "and round equal to the last verdict's round plus one.")
class ResyncKeepsRound(DrafterSession):
    """After a resynchronisation it keeps its own round count instead of the state's."""

    def apply_resync(self, tokens: Sequence[int]) -> Next:
        before = self.round
        step = super().apply_resync(tokens)
        self.round = before
        return step


@CATALOGUE.mutant("drf-stale-base-stops", "resync", "gives up on sdcp-stale-base instead of resynchronising",
                  "P1-DRF-6", _RESYNC, profile_only=True)
class StaleBaseStops(DrafterSession):
    """Gives up on sdcp-stale-base instead of resynchronising (P1-DRF-6)."""

    def on_stale_base(self, state: SessionState | None) -> Next:
        self.outstanding = None
        return self.stop("stale base")


class IgnoresDraftersListSession(DrafterSession):
    """The session side of :class:`~sdcp_conformance.mutants.drafter.apps.IgnoresDraftersList`."""

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


@CATALOGUE.mutant("drf-greedy-instead-of-sampled", "sampling", "publishes its rows but proposes their argmax", "5.2",
                  EXACT, into="wrap_model")
class GreedyInsteadOfSampled(_TokenChoice):
    """Publishes its rows but proposes each row's most probable token."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        return int(np.argmax(row)), row


@CATALOGUE.mutant("drf-samples-untempered", "sampling", "publishes the profile's rows but draws at temperature 1",
                  "5.2", EXACT, into="wrap_model")
class SamplesUntempered(_TokenChoice):
    """Publishes the rows of the sampling profile but draws from the untempered distribution (temperature 1)."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        untempered, _ = self.inner.draft(session_key, context, 1, None, RULE_SPECULATIVE_SAMPLING, rng)
        return int(untempered[0]), row


@CATALOGUE.mutant("drf-rows-shifted", "sampling", "publishes each position's row one position late", "5.2", EXACT,
                  into="wrap_model")
class RowsShifted(_TokenChoice):
    """Publishes each position's row one position late: the row it stores for x[i] is the one after x[i]."""

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        _, after = self.inner.draft(session_key, (*context, drawn), 1, sampling, RULE_SPECULATIVE_SAMPLING, rng)
        return drawn, after[0]


@CATALOGUE.mutant("drf-samples-target-p", "sampling", "draws from the target's p instead of its published row", "5.2",
                  EXACT, into="wrap_model")
class SamplesTargetP(_TokenChoice):
    """Publishes its own rows but draws from the target's p (an MTP head wired to the wrong distribution)."""

    target = "bigram"

    def choose(self, session_key: bytes, context: tuple[int, ...], row: QRows, drawn: int,
               sampling: Mapping[str, int] | None, rng: np.random.Generator) -> tuple[int, QRows]:
        p = target_distribution(bigram_logits(context[-1], self.target), sampling, RULE_SPECULATIVE_SAMPLING)
        return draw_token(p, float(rng.random())), row


@CATALOGUE.mutant("drf-median-token", "sampling", "draws every token with the same uniform 0.5", "5.2", EXACT,
                  into="wrap_model")
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
