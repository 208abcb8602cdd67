"""The evidence of a case: every message exchanged with the IUT, in order, in CBOR diagnostic notation.

Three sources feed one timeline: requests the harness sends to the IUT (as
router or drafter), requests the IUT sends to the harness's cache, and
requests the IUT sends to the harness's router (events, status). Entries
carry a global sequence number, so the merged transcript is in the order the
harness saw things happen.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.cache.transcript import render_body
from sdcp_conformance.harness.self_check import SelfCheck

_SEQUENCE = itertools.count(1)
_LOCK = threading.Lock()


def next_sequence() -> int:
    with _LOCK:
        return next(_SEQUENCE)


class Entry:
    """One request/response pair, from the harness's point of view.

    Bodies may be given as text already rendered, or as the raw bytes: then
    they are rendered (CBOR diagnostic notation, :func:`render_body`) the
    first time someone reads them, so an exchange nobody looks at costs
    nothing but keeping its bytes — the harness records every message of a
    certification and most are never shown.
    """

    __slots__ = ("_request", "_request_type", "_response", "_response_type", "direction", "method", "note",
                 "party", "sequence", "status", "target")

    def __init__(self, sequence: int, direction: str, party: str, method: str, target: str,
                 request_body: str | bytes, status: int | None, response_body: str | bytes, note: str = "", *,
                 request_type: str | None = None, response_type: str | None = None) -> None:
        self.sequence = sequence
        self.direction = direction
        """``"to-iut"`` (the harness called the IUT) or ``"from-iut"`` (the IUT called the harness)."""
        self.party = party
        """The harness party that sent or received it: router, drafter-1, drafter-2, cache, …"""
        self.method = method
        self.target = target
        self.status = status
        self.note = note
        """A transport failure, a timeout, an injected fault, the answer's content type."""
        self._request: str | bytes = request_body
        self._request_type = request_type
        self._response: str | bytes = response_body
        self._response_type = response_type

    @property
    def request_body(self) -> str:
        if isinstance(self._request, bytes):
            self._request = render_body(self._request, self._request_type)
        return self._request

    @property
    def response_body(self) -> str:
        if isinstance(self._response, bytes):
            self._response = render_body(self._response, self._response_type)
        return self._response

    def to_json(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "direction": self.direction, "party": self.party, "method": self.method,
                "target": self.target, "request_body": self.request_body, "status": self.status,
                "response_body": self.response_body, "note": self.note}

    def render(self) -> str:
        arrow = "→" if self.direction == "to-iut" else "←"
        head = f"#{self.sequence} {self.party} {arrow} {self.method} {self.target}"
        lines = [head]
        if self.request_body:
            lines.append(f"    body: {self.request_body}")
        lines.append(f"    answer: {self.status if self.status is not None else '—'} {self.response_body}".rstrip())
        if self.note:
            lines.append(f"    note: {self.note}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Entry(#{self.sequence} {self.party} {self.method} {self.target} -> {self.status})"


@dataclass(frozen=True)
class DeadlineMiss:
    """A deadline the IUT did not meet: what was asked, where it stalled, how long it had (P1-JUDGE-5)."""

    what: str
    """The failure as the client words it ("POST proposals: no response headers within 5 s")."""
    stage: str
    """The stage's label ("no response headers", "TLS handshake stalled after TCP connect", "the case")."""
    deadline_s: float | None = None


class CaseTranscript:
    """Entries collected for one case (thread-safe: the cache may run on another thread)."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._lock = threading.Lock()
        self.last_answer_at: float | None = None
        """When (``time.monotonic()``) the IUT last answered a request of the harness: how the runner tells a
        slow IUT from a hung one."""
        self.deadline_misses: list[DeadlineMiss] = []
        """Requests to the IUT (and waits for it) whose deadline expired: the case's evidence of time, not of a
        deviation (P1-JUDGE-5)."""
        self.self_check = SelfCheck()
        """The harness's checks of itself in this case: its messages that broke the CDDL, its faults' evidence."""
        self.lost_answers: list[str] = []
        """Requests the IUT admitted and never answered because their connection ended, each with how its resend
        was answered (P1-JUDGE-6)."""
        self.features_used: set[str] = set()
        """The optional features the messages the harness sent exercised (:mod:`~.features`, D-JUDGE-DECL-1)."""
        self.disturbed: list[str] = []
        """Lost answers whose resend was refused (4xx) — as the draft allows once the lost request was processed
        (a proposal whose lost verdict said "switch" is refused 403 to the same drafter afterwards, §6.3 step 1):
        what the lost answer said cannot be known, so the case cannot judge it (D-JUDGE-LOST-2)."""

    def missed_deadline(self, miss: DeadlineMiss) -> None:
        with self._lock:
            self.deadline_misses.append(miss)

    def lost_answer(self, what: str, *, refused: bool = False) -> None:
        with self._lock:
            self.lost_answers.append(what)
            if refused:
                self.disturbed.append(what)

    def add(self, entry: Entry) -> None:
        with self._lock:
            self._entries.append(entry)
            if entry.direction == "to-iut" and entry.status is not None:
                self.last_answer_at = time.monotonic()

    def record(self, direction: str, party: str, method: str, target: str, request: bytes, status: int | None,
               response: bytes, *, content_type: str | None = None, note: str = "") -> Entry:
        entry = Entry(next_sequence(), direction, party, method, target, bytes(request), status, bytes(response),
                      note, response_type=content_type)
        self.add(entry)
        return entry

    def entries(self) -> list[Entry]:
        with self._lock:
            return sorted(self._entries, key=lambda entry: entry.sequence)

    def render(self) -> str:
        return "\n".join(entry.render() for entry in self.entries())


__all__ = ["CaseTranscript", "DeadlineMiss", "Entry", "next_sequence"]
