"""What the harness knows of a session it started at a router, and the committed output it must have.

The truth of a session is its commit log, read with the rule of §6.8/§6.9 as
the harness implements it here, from first principles: a commit record counts
unless a fence with a higher epoch precedes it (so a partitioned old
verifier's late records never count), and the committed output is the
concatenation of the counted records' ``emitted`` tokens, each record's
digest being the §4.2 chain over them. The checker compares every resume,
every ``committed_tokens`` object, every assignment and every front output
with this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, LogRecord
from sdcp_conformance.protocol.chain import contract_digest, extend_digest, prefix_digest


@dataclass(frozen=True)
class FrontSession:
    """A session the harness asked the router's front to open (P1-FRONT-1)."""

    id: bytes
    contract: dict[str, Any]
    """The contract exactly as sent (a dict of CDDL members; its digest is over its deterministic encoding)."""
    prompt: tuple[int, ...] | str
    """As sent: tokens or a cache-ref."""
    prompt_tokens: tuple[int, ...]
    asked_seq: int
    """The timeline position just before the front request was sent."""
    opened_prompt: tuple[int, ...] | None = None
    """D-JUDGE-R10: the prompt tokens the router opened the session with at its verifier, where they are not the
    front's. Only P1-FRONT-1 says the session-open carries the prompt the front was given (a NON-STRICT deviation,
    judged on the open); the session's digests and assignments then follow the prompt the router opened it with,
    so that the rest of a case judges the router's work on the session that exists."""

    @property
    def digest(self) -> bytes:
        return contract_digest(self.contract)

    @property
    def session_prompt(self) -> tuple[int, ...]:
        """The prompt the session's digests are over: the router's where it opened another (D-JUDGE-R10)."""
        return self.opened_prompt if self.opened_prompt is not None else self.prompt_tokens

    @property
    def d0(self) -> bytes:
        return prefix_digest(self.digest, self.session_prompt)

    def d(self, tokens: Sequence[int]) -> bytes:
        return extend_digest(self.d0, tokens)

    def same_prompt(self, prompt: Sequence[int] | str) -> bool:
        """"that prompt" (P1-FRONT-1): the same tokens, or the same cache-ref (or the tokens it holds)."""
        if isinstance(prompt, str):
            return prompt == self.prompt
        return tuple(prompt) == self.prompt_tokens

    def is_session_prompt(self, prompt: Sequence[int] | str) -> bool:
        """The session's prompt (an assignment's, §5.2): the front's, or the router's where it opened another."""
        if self.opened_prompt is not None and not isinstance(prompt, str):
            return tuple(prompt) == self.opened_prompt
        return self.same_prompt(prompt)


@dataclass(frozen=True)
class Truth:
    """The counted records of a commit log and the committed output they make."""

    records: tuple[CommitRecord, ...]
    tokens: tuple[int, ...] = field(default=())

    @property
    def last(self) -> CommitRecord | None:
        return self.records[-1] if self.records else None


def counted(log: Sequence[LogRecord]) -> Truth:
    """§6.9/P1-RTR-6: records preceded by a fence with a higher epoch do not count."""
    fence = 0
    kept: list[CommitRecord] = []
    for record in log:
        if isinstance(record, FenceRecord):
            fence = max(fence, record.epoch)
        elif record.epoch >= fence:
            kept.append(record)
    return Truth(tuple(kept), tuple(token for record in kept for token in record.emitted))


def expected_resume(log: Sequence[LogRecord], session: FrontSession) -> tuple[int, int, bytes, tuple[int, ...]]:
    """(round, committed, digest, tokens) a resume must carry: the last counted record (§6.9), or d[0] if none."""
    truth = counted(log)
    last = truth.last
    if last is None:
        return 0, 0, session.d0, ()
    return last.round, last.committed, last.digest, truth.tokens


def fences(log: Sequence[LogRecord]) -> list[int]:
    return [record.epoch for record in log if isinstance(record, FenceRecord)]


@dataclass(frozen=True)
class Facts:
    """The harness's own configuration, which the router was given (P1-TLS-2, P1-RTR-2)."""

    router: str
    """The router's base URI (its identity, P1-ID-1)."""
    cache_base: str
    verifiers: Mapping[str, str]
    """Played verifier name → base URI."""
    drafters: Mapping[str, str]
    """Played drafter name → base URI."""
    drafter_models: Mapping[str, bytes]
    """Played drafter name → SHA-256 of its model."""
    expiry_margin_s: float = 0.5
    """D-JUDGE-R4: a decision reaching the harness more than this after an instance's status expired (by the
    harness's clock, which is never earlier than the router's) was taken with that status expired."""

    def drafter_named(self, uri: str) -> str | None:
        return next((name for name, base in self.drafters.items() if base == uri), None)

    def verifier_named(self, uri: str) -> str | None:
        return next((name for name, base in self.verifiers.items() if base == uri), None)


__all__ = ["Facts", "FrontSession", "Truth", "counted", "expected_resume", "fences"]
