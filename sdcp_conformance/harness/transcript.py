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
from dataclasses import asdict, dataclass
from typing import Any

from sdcp_conformance.cache.transcript import render_body

_SEQUENCE = itertools.count(1)
_LOCK = threading.Lock()


def next_sequence() -> int:
    with _LOCK:
        return next(_SEQUENCE)


@dataclass(frozen=True)
class Entry:
    """One request/response pair, from the harness's point of view."""

    sequence: int
    direction: str
    """``"to-iut"`` (the harness called the IUT) or ``"from-iut"`` (the IUT called the harness)."""
    party: str
    """The harness party that sent or received it: router, drafter-1, drafter-2, cache, …"""
    method: str
    target: str
    request_body: str
    status: int | None
    response_body: str
    note: str = ""
    """A transport failure, a timeout, an injected fault."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

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


class CaseTranscript:
    """Entries collected for one case (thread-safe: the cache may run on another thread)."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._lock = threading.Lock()

    def add(self, entry: Entry) -> None:
        with self._lock:
            self._entries.append(entry)

    def record(self, direction: str, party: str, method: str, target: str, request: bytes, status: int | None,
               response: bytes, *, content_type: str | None = None, note: str = "") -> Entry:
        entry = Entry(next_sequence(), direction, party, method, target, render_body(request), status,
                      render_body(response, content_type), note)
        self.add(entry)
        return entry

    def entries(self) -> list[Entry]:
        with self._lock:
            return sorted(self._entries, key=lambda entry: entry.sequence)

    def render(self) -> str:
        return "\n".join(entry.render() for entry in self.entries())


__all__ = ["CaseTranscript", "Entry", "next_sequence"]
