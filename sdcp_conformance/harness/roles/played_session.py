"""The played verifier's account of one session: the committed truth and what the drafter was told.

The harness is the session's verifier (and its router), so it knows the
committed prefix exactly — tokens, n and d[n], recomputed from the tokens
(§4.2) — and it knows what it told the drafter last: the assignment's round,
committed length and digest, then each verdict's, then a resynchronising
``state`` (§6.2 "the committed length and digest it last learned"), and the
M limit that applies (m_init of the assignment before the first verdict,
then the last verdict's m_cap, P1-CTL-1). Every proposal that arrives is an
:class:`Arrival`; the latest one without a final answer is the session's
open exchange, which is what "one outstanding proposal" and "retries a
proposal whose verdict it did not receive" are judged against.
"""

from __future__ import annotations

import asyncio
import copy
import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from sdcp_conformance.protocol.chain import contract_digest, extend_digest, prefix_digest
from sdcp_conformance.protocol.messages import Proposal
from sdcp_conformance.transport.types import Response

Rows = npt.NDArray[np.float64]


class Outcome(enum.Enum):
    """What became of a proposal the played verifier received."""

    PENDING = "pending"
    """Not answered yet (held)."""
    VERDICT = "verdict"
    FINAL = "final"
    """Refused with a 4xx (P1-DRF-5: "a 4xx is final")."""
    LOST = "lost"
    """Answered with a 5xx or 429, or a transport fault: the drafter did not receive a verdict."""
    ABANDONED = "abandoned"
    """The drafter gave up on the request (its timeout) before the harness answered."""


@dataclass(frozen=True)
class Observation:
    """Something the played verifier saw that a row judges (the context routes it to a finding)."""

    row: str
    message: str
    expected: str = ""
    actual: str = ""


@dataclass
class Arrival:
    """One proposal request as the played verifier received it."""

    sequence: int
    at: float
    verifier: str
    peer: str | None
    body: bytes
    content_type: str | None
    proposal: Proposal | None
    error: str = ""
    """Why the body is not a proposal (empty when it is)."""
    future: asyncio.Future[Response] | None = None
    outcome: Outcome = Outcome.PENDING
    answer: str = ""
    """What the harness answered, for the evidence."""
    observations: list[Observation] = field(default_factory=list)
    rows: Rows | None = None
    """The q_rows object's rows as published (rule 2), read when the proposal arrived."""
    judged: bool = False
    late: bool = False
    """Sent under the assignment the latest one replaced, before the drafter received it (a race the drafter
    cannot avoid): answered as a verifier would, not judged, not shown to cases."""
    superseded: bool = False
    """Still unanswered when a new assignment replaced the one it follows: the drafter abandoned it (P1-DRF-7)."""
    twin: bool = False
    """A copy of a proposal the harness had already answered (the drafter's retry after its own timeout): it got
    the same answer, and cases do not see it as a new proposal (its observations are judged all the same)."""

    @property
    def key(self) -> bytes:
        """P1-IDEM-1: identical proposals are equal in every member except ``status``."""
        return self.proposal.identity_key() if self.proposal is not None else self.body

    @property
    def m(self) -> int:
        return len(self.proposal.tokens) if self.proposal is not None else 0

    def describe(self) -> str:
        if self.proposal is None:
            return f"#{self.sequence} (not a proposal: {self.error})"
        p = self.proposal
        return (f"#{self.sequence} round {p.round} epoch {p.epoch} base {p.base} M {len(p.tokens)} "
                f"tokens {list(p.tokens)}{' q_rows' if p.q_rows else ''}")


@dataclass(frozen=True)
class Learned:
    """What the drafter was last told about the committed prefix."""

    round: int
    committed: int
    digest: bytes
    source: str
    """``assignment``, ``verdict`` or ``state``."""


@dataclass
class PlayedSession:
    """The harness's session, seen from the verifier's side of the table."""

    id: bytes
    contract: dict[str, Any]
    prompt: list[int]
    epoch: int = 1
    verifier: str = ""
    output: list[int] = field(default_factory=list)
    round: int = 0
    sampling: dict[str, int] | None = None
    learned: Learned | None = None
    limit: int = 0
    assignment_limit: int = 0
    """min(m_max, m_init) of the assignment held: the limit before its first verdict (§6.2)."""
    open: Arrival | None = None
    finals: dict[bytes, str] = field(default_factory=dict)
    undelivered: dict[bytes, tuple[Response, str]] = field(default_factory=dict)
    """Final answers the drafter had given up waiting for (its request gone before the harness answered): the
    identical retry gets the answer (D-JUDGE-D17), and only then is it final."""
    stopped: tuple[str, str] | None = None
    """(row, why) once the harness told the drafter to stop proposing for the session."""
    forged_output: list[int] | None = None
    """GET output serves these tokens instead of the committed ones (a forged resync, P1-DRF-6)."""
    forged_after: int | None = None
    """The committed length the drafter had checked before the forged resync began."""
    arrivals: list[Arrival] = field(default_factory=list)
    queue: asyncio.Queue[Arrival] = field(default_factory=asyncio.Queue)
    verdicts: dict[int, Response] = field(default_factory=dict)
    """Round → the verdict response sent (a retry of a decided round gets it again, §6.3 Idempotency)."""
    decided_keys: dict[int, bytes] = field(default_factory=dict)
    """Round → the key of the proposal its verdict answered."""
    answered_at: float | None = None
    """Loop time of the last verdict sent (to measure the drafter's pace)."""
    output_reads: list[tuple[int, str | None]] = field(default_factory=list)
    """(from, peer) of every GET output the drafter made."""
    output_paths: list[str] = field(default_factory=list)
    """The ``{id}`` of every GET output's path, as the drafter wrote it (P1-MSG-3)."""
    read: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at every GET output (a case waits on it, never on a timer)."""
    superseded: tuple[int, Learned, int] | None = None
    """(epoch, learned, limit) of the assignment the latest one replaced, and when (``superseded_at``)."""
    superseded_at: float = 0.0
    abandoned: frozenset[bytes] = frozenset()
    """Keys of every proposal received before the latest assignment: P1-DRF-7 abandons them."""
    in_doubt: dict[str, Any] | None = None
    """While an assignment is on its way: what the session held before it (a proposal arriving then may follow
    either, so it is judged only on what both would find wrong, and it is not held against later ones)."""

    # ------------------------------------------------------------------ the committed truth (§4.2)

    @property
    def contract_digest(self) -> bytes:
        return contract_digest(self.contract)

    @property
    def d0(self) -> bytes:
        return prefix_digest(self.contract_digest, self.prompt)

    def digest_at(self, n: int) -> bytes:
        return extend_digest(self.d0, self.output[:n])

    @property
    def digest(self) -> bytes:
        return self.digest_at(len(self.output))

    @property
    def rule(self) -> int:
        return int(self.contract["rule"])

    @property
    def m_max(self) -> int:
        return int(self.contract["m_max"])

    @property
    def profile(self) -> dict[str, int] | None:
        """The sampling profile in force: the assignment's ``sampling`` if sent, else the contract's (§6.6)."""
        if self.sampling is not None:
            return dict(self.sampling)
        contract_profile = self.contract.get("sampling")
        return dict(contract_profile) if contract_profile is not None else None

    def context(self, n: int | None = None) -> list[int]:
        return [*self.prompt, *self.output[: len(self.output) if n is None else n]]

    # ------------------------------------------------------------------ what the drafter is told

    def assigned(self, *, epoch: int, m_init: int, verifier: str, sampling: dict[str, int] | None,
                 now: float = 0.0) -> None:
        """P1-DRF-7: a new assignment replaces the held one, abandoning any outstanding proposal."""
        if self.learned is not None:
            self.superseded, self.superseded_at = (self.epoch, self.learned, self.limit), now
        self.abandoned = frozenset(arrival.key for arrival in self.arrivals)
        self.forged_output = self.forged_after = None  # the assignment carries the committed tokens
        self.epoch, self.verifier, self.sampling = epoch, verifier, sampling
        self.learned = Learned(self.round, len(self.output), self.digest, "assignment")
        self.limit = self.assignment_limit = min(self.m_max, m_init)
        self.open = None
        self.stopped = None
        self.finals.clear()
        self.undelivered.clear()

    _TOLD = ("epoch", "verifier", "sampling", "learned", "limit", "assignment_limit", "open", "stopped", "superseded",
             "superseded_at", "abandoned", "forged_output", "forged_after")

    def snapshot(self) -> dict[str, Any]:
        """What an assignment changes (so that a refused one can be undone)."""
        return {name: getattr(self, name) for name in self._TOLD} | {"finals": dict(self.finals),
                                                                     "undelivered": dict(self.undelivered)}

    def restore(self, saved: dict[str, Any]) -> None:
        for name, value in saved.items():
            setattr(self, name, value)

    def before(self) -> PlayedSession:
        """A view of the session as it was before the assignment in doubt (shares everything else)."""
        view = copy.copy(self)
        if self.in_doubt is not None:
            view.restore(self.in_doubt)
        return view

    def decided(self, round_: int, emitted: list[int], m_cap: int) -> None:
        """A verdict for ``round_`` was sent: the prefix grows, the limit is the verdict's m_cap."""
        self.output.extend(emitted)
        self.round = round_
        self.learned = Learned(round_, len(self.output), self.digest, "verdict")
        self.limit = min(self.m_max, m_cap)

    def advanced(self, round_: int, emitted: list[int]) -> None:
        """The session moved on without this drafter (another drafter, self-decoding): nothing is told yet."""
        self.output.extend(emitted)
        self.round = round_

    def may_not_have_learned_the_last_verdict(self) -> None:
        """D-JUDGE-D-LATE-LIMIT: the drafter proposed under its assignment after the harness had answered another
        proposal with a verdict. That verdict answered a request the drafter may have abandoned (P1-DRF-7: it sent
        it just before the assignment reached it), so its m_cap may never have reached the drafter: until the next
        verdict, M may go up to the assignment's limit as well (§6.2: "m_init before the first")."""
        self.limit = max(self.limit, self.assignment_limit)

    def told_state(self) -> None:
        """A 409 sdcp-stale-base with the current state was sent: that is what the drafter learns."""
        self.learned = Learned(self.round, len(self.output), self.digest, "state")

    def stop(self, row: str, why: str) -> None:
        self.stopped = (row, why)

    def served_output(self) -> list[int]:
        return list(self.forged_output) if self.forged_output is not None else list(self.output)


__all__ = ["Arrival", "Learned", "Observation", "Outcome", "PlayedSession", "Rows"]
