"""Everything the harness saw while it played verifiers, drafters, the MLC and the front client for a router.

Jepsen's checkers judge a history, not a live system; so does the router
suite. Each played role appends an observation here the moment it happens —
a session-open that arrived (with the commit log as it stood then), a
``PUT …/drafter`` and what it answered, an assignment (with the verifier's
latest ``PUT`` as it stood then), the router's MLC requests, the harness's own
commits, the front's outputs, status reports and events — numbered on the
harness's one timeline (:func:`~sdcp_conformance.harness.transcript.next_sequence`).
The checker (:mod:`.router_checks`) reads nothing else, so a case, the
failover campaign and the benchmark judge a router the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from sdcp_conformance.cache.commit_log import CommitRecord, LogRecord
from sdcp_conformance.harness.transcript import next_sequence
from sdcp_conformance.protocol.messages import Assignment, Output, Policy, SessionOpen, SessionState

S = TypeVar("S", bound="Seen")


@dataclass(frozen=True, kw_only=True)
class Seen:
    """One observation: its place on the harness's timeline and the loop time it was made."""

    seq: int = field(default_factory=next_sequence)
    at: float = 0.0

    @property
    def session(self) -> bytes | None:
        return None


@dataclass(frozen=True, kw_only=True)
class OpenSeen(Seen):
    """A ``POST sessions`` that reached a played verifier (§6.1, §6.9)."""

    verifier: str
    """The played verifier's name (``verifier-1``…)."""
    peer: str | None
    media_type: str
    opening: SessionOpen | None
    """``None`` when the body was not a well-formed session-open."""
    status: int
    """What the played verifier answered."""
    log: tuple[LogRecord, ...]
    """The session's commit log when the open arrived (empty when it does not exist or is unreadable)."""
    tokens_object: tuple[int, ...] | None = None
    """The resume's ``committed_tokens`` object when the open arrived (``None``: missing or not a token list)."""
    expired_for: float | None = None
    """How long the verifier's latest status had been expired by the harness's clock (``None``: unexpired)."""
    deterministic: bool = True
    """The body was in core deterministic encoding (P1-MSG-1)."""

    @property
    def session(self) -> bytes | None:
        return self.opening.session if self.opening is not None else None

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True, kw_only=True)
class PutSeen(Seen):
    """A ``PUT sessions/{id}/drafter`` at a played verifier and the session-state it answered."""

    verifier: str
    peer: str | None
    media_type: str
    assignment: Assignment | None
    path_session: bytes | None
    status: int
    state: SessionState | None
    tokens_object: tuple[int, ...] | None = None
    deterministic: bool = True

    @property
    def session(self) -> bytes | None:
        return self.assignment.session if self.assignment is not None else self.path_session

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True, kw_only=True)
class AssignSeen(Seen):
    """A ``POST assignments`` at a played drafter (§6.1, §6.9)."""

    drafter: str
    peer: str | None
    media_type: str
    assignment: Assignment | None
    status: int
    verifier_put: PutSeen | None
    """The latest ``PUT …/drafter`` the named verifier had received for the session when this arrived."""
    tokens_object: tuple[int, ...] | None = None
    expired_for: float | None = None
    deterministic: bool = True

    @property
    def session(self) -> bytes | None:
        return self.assignment.session if self.assignment is not None else None


@dataclass(frozen=True, kw_only=True)
class PolicySeen(Seen):
    """A ``POST sessions/{id}/policy`` at a played verifier (§6.6)."""

    verifier: str
    peer: str | None
    policy: Policy | None
    round_then: int | None
    """The session's round at the verifier when the policy arrived."""
    status: int
    state: SessionState | None
    deterministic: bool = True

    @property
    def session(self) -> bytes | None:
        return self.policy.session if self.policy is not None else None

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True, kw_only=True)
class OutputServed(Seen):
    """A ``GET …/output`` a played verifier answered (the router reading for its front)."""

    verifier: str
    peer: str | None
    path_session: bytes | None
    start: int
    output: Output | None
    status: int

    @property
    def session(self) -> bytes | None:
        return self.path_session


@dataclass(frozen=True, kw_only=True)
class CacheSeen(Seen):
    """A request to the harness's MLC, with the object before and after it."""

    method: str
    path: str
    peer: str | None
    if_match: str | None
    if_none_match: str | None
    status: int
    before: bytes | None
    after: bytes | None
    body: bytes


@dataclass(frozen=True, kw_only=True)
class CommitSeen(Seen):
    """A commit record one of the harness's verifiers appended (or tried to), and whether it counts."""

    verifier: str
    session_id: bytes
    record: CommitRecord
    appended: bool
    """The record is in the log (an enforcing MLC refuses a fenced one)."""
    released: bool
    """The verifier made its tokens available as output (a zombie does even after a fence)."""

    @property
    def session(self) -> bytes | None:
        return self.session_id


@dataclass(frozen=True, kw_only=True)
class FrontSeen(Seen):
    """A front read the harness's client made (P1-FRONT-2)."""

    session_id: bytes
    asked: int
    """The timeline position just before the request was sent."""
    start: int
    status: int | None
    output: Output | None
    described: str

    @property
    def session(self) -> bytes | None:
        return self.session_id


@dataclass(frozen=True, kw_only=True)
class StatusSent(Seen):
    """A status report a played instance sent the router, and its answer (``None``: no answer)."""

    instance: str
    ttl_ms: int
    status: int | None
    identity: str


@dataclass(frozen=True, kw_only=True)
class EventSent(Seen):
    """An event a played verifier (or an impostor) sent the router."""

    sender: str
    session_id: bytes
    kind: int
    epoch: int
    status: int | None

    @property
    def session(self) -> bytes | None:
        return self.session_id


def deterministic(body: bytes) -> bool:
    """P1-MSG-1: "Senders use core deterministic encoding (RFC 8949 §4.2.1) for every message"."""
    from sdcp_conformance.protocol.codec import decode, encode
    from sdcp_conformance.protocol.errors import MalformedMessage

    try:
        return encode(decode(body)) == body
    except (MalformedMessage, ValueError):
        return False


@dataclass
class History:
    """The observations, in timeline order (indexed by session and by MLC path), and a way to wait for one."""

    items: list[Seen] = field(default_factory=list)
    _event: asyncio.Event | None = None
    _by_session: dict[bytes | None, list[Seen]] = field(default_factory=dict)
    _by_path: dict[str, list[CacheSeen]] = field(default_factory=dict)

    def add(self, seen: Seen) -> Seen:
        self.items.append(seen)
        self._by_session.setdefault(seen.session, []).append(seen)
        if isinstance(seen, CacheSeen):
            self._by_path.setdefault(seen.path, []).append(seen)
        event, self._event = self._event, None
        if event is not None:
            event.set()
        return seen

    def of(self, kind: type[S], session: bytes | None = None, *, since: int = 0) -> list[S]:
        """Observations of ``kind`` (about ``session``, at or after sequence ``since``), in order."""
        pool = self.items if session is None else self._by_session.get(session, [])
        return [item for item in pool if isinstance(item, kind) and item.seq >= since]

    def at_path(self, path: str) -> list[CacheSeen]:
        """The MLC requests for the object at ``path``, in order."""
        return list(self._by_path.get(path, []))

    def __iter__(self) -> Iterator[Seen]:
        return iter(list(self.items))

    def mark(self) -> int:
        """A sequence number: everything observed from now on has a higher one."""
        return next_sequence()

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds or ``timeout_s`` passes; woken by every new observation.

        Conditions that depend on the clock as well (an expiry) are re-checked at least every 0.25 s.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            if self._event is None:
                self._event = asyncio.Event()
            event = self._event
            if predicate():
                return True
            try:
                await asyncio.wait_for(event.wait(), min(remaining, 0.25))
            except TimeoutError:
                continue
        return True


__all__ = [
    "AssignSeen",
    "CacheSeen",
    "CommitSeen",
    "EventSent",
    "FrontSeen",
    "History",
    "OpenSeen",
    "OutputServed",
    "PolicySeen",
    "PutSeen",
    "Seen",
    "StatusSent",
    "deterministic",
]
