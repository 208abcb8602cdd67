"""The MLC the harness plays for a drafter under test: its cache app, with every request observed.

A drafter writes its ``q_rows`` to the MLC before it proposes, holds a lease
on them until the verdict, and deletes them afterwards (§6.2, P1-MLC-3,
P1-DRF-8); it reads token lists (``prompt``, ``committed_tokens``) from it
(P1-MLC-2). The observer wraps the harness's :class:`~sdcp_conformance.cache.app.CacheApp`
and keeps, for each request the drafter sent, what it asked (method, path,
``SDCP-Lease``) and what it got, ordered on the harness's one timeline
(:func:`~sdcp_conformance.harness.transcript.next_sequence`), so a case can say
"the PUT of these rows completed before the proposal arrived". The cache's
fault plan slows or fails the drafter's requests where a case says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sdcp_conformance.cache.app import LEASE_HEADER, CacheApp
from sdcp_conformance.harness.arrivals import wait_until
from sdcp_conformance.harness.transcript import CaseTranscript, next_sequence
from sdcp_conformance.transport.types import Request, Response


@dataclass(frozen=True)
class CacheEvent:
    """One request the IUT sent to the harness's MLC, recorded when it was answered."""

    sequence: int
    at: float
    """Loop time when the answer was ready."""
    method: str
    path: str
    status: int
    lease_ms: int | None
    """The ``SDCP-Lease`` the request carried (None: none, or not a number)."""
    lease_header: str | None
    size: int
    peer: str | None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class CacheObserver:
    """A handler in front of the cache app that records every exchange (and feeds the case transcript)."""

    app: CacheApp
    transcript: Callable[[], CaseTranscript | None] = lambda: None
    events: list[CacheEvent] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    bandwidth_bytes_per_s: float | None = None
    """When set, a PUT takes as long as its body needs at this bandwidth: the scarce "cache bandwidth currently
    available" of §6.2, which a fixed delay would not model (it does not grow with M)."""

    async def __call__(self, request: Request) -> Response:
        if self.bandwidth_bytes_per_s and request.method.upper() == "PUT" and request.body:
            await asyncio.sleep(len(request.body) / self.bandwidth_bytes_per_s)  # simulated transfer time
        response = await self.app(request)
        header = request.header(LEASE_HEADER)
        lease = int(header) if header is not None and header.strip().isdigit() else None
        loop = asyncio.get_running_loop()
        self.events.append(CacheEvent(next_sequence(), loop.time(), request.method.upper(), request.path,
                                      response.status, lease, header, len(request.body), request.peer_identity))
        transcript = self.transcript()
        if transcript is not None:
            note = f"SDCP-Lease: {header}" if header is not None else ""
            if response.fault is not None:
                note = f"{note}; fault: {response.fault.value}".lstrip("; ")
            transcript.record("from-iut", "cache", request.method, request.path, request.body, response.status,
                              response.body, content_type=response.header("content-type"), note=note)
        self.changed.set()
        return response

    # ------------------------------------------------------------------ queries

    def of(self, uri_or_path: str, method: str | None = None) -> list[CacheEvent]:
        """Events for one object (given by URI or path), optionally of one method."""
        path = urlsplit(uri_or_path).path if "://" in uri_or_path else uri_or_path
        return [event for event in self.events
                if event.path == path and (method is None or event.method == method.upper())]

    def stored(self, uri: str, now: float) -> bytes | None:
        """The object's bytes as the cache holds them now (None when missing or its lease has passed)."""
        found = self.app.store.get(urlsplit(uri).path, now)
        return None if found is None else found.data

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds or the timeout passes; woken by each recorded request."""
        return await wait_until(self.changed, predicate, timeout_s)

    def clear(self) -> None:
        self.events.clear()


__all__ = ["CacheEvent", "CacheObserver"]
