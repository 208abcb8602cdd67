"""The router the harness plays for a drafter or a verifier under test: where the IUT reports its status (and a
verifier its events), one :class:`PlayedRouter` for both.

§6.1: "Each instance reports status at intervals shorter than its ttl_ms";
P1-RTR-1: ``PUT instances/{id}/status`` with ``{id}`` the unpadded base64url of
the instance's base URI. The inbox keeps every report with its arrival time,
path, sender and decoded body (or why it did not decode), and answers 204
(P1-MSG-4), so a case can judge the intervals, the fields and ``accept_milli``.
Assignments go the other way: the harness sends them with its router
identity through :class:`~sdcp_conformance.harness.iut.IutLink`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from sdcp_conformance.harness.arrivals import wait_until
from sdcp_conformance.harness.transcript import CaseTranscript, next_sequence
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import Event, Status
from sdcp_conformance.transport.types import Request, Response


@dataclass(frozen=True)
class StatusReport:
    sequence: int
    at: float
    """Loop time of arrival."""
    path: str
    peer: str | None
    content_type: str | None
    status: Status | None
    error: str = ""
    """Why the body is not a status message (empty when it is)."""


@dataclass
class PlayedRouter:
    """The played router's listener: ``PUT …/instances/{id}/status`` from an IUT of any role (§5.1 Table 1), and
    with ``accepts_events`` (a verifier under test) ``POST …/events``; other resources are 404.

    Each status report is kept with its arrival time, path, sender and why its body is not a status message (if
    it is not), for the §6.1 cases to judge; each event with its sender. ``transcript``: where its exchanges are
    recorded (None where the environment records them itself)."""

    accepts_events: bool = False
    transcript: Callable[[], CaseTranscript | None] | None = None
    reports: list[StatusReport] = field(default_factory=list)
    events: list[tuple[str | None, Event]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, request: Request) -> Response:
        if request.method == "PUT" and "/instances/" in request.path and request.path.endswith("/status"):
            response = self._status(request)
        elif self.accepts_events and request.method == "POST" and request.path.endswith("/events"):
            response = self._event(request)
        else:
            response = Response(404)
        transcript = self.transcript() if self.transcript is not None else None
        if transcript is not None:
            transcript.record("from-iut", "router", request.method, request.path, request.body, response.status,
                              b"")
        return response

    def _status(self, request: Request) -> Response:
        status, error = None, ""
        try:
            status = Status.from_cbor(request.body)
        except (MalformedMessage, ProtocolError) as exc:
            error = str(exc)
        loop = asyncio.get_running_loop()
        self.reports.append(StatusReport(next_sequence(), loop.time(), request.path, request.peer_identity,
                                         request.header("content-type"), status, error))
        self.changed.set()
        return Response(400 if error else 204)

    def _event(self, request: Request) -> Response:
        try:
            self.events.append((request.peer_identity, Event.from_cbor(request.body)))
        except Exception:  # the IUT sent something malformed: record it as refused, judge it in the case
            return Response(400)
        self.changed.set()
        return Response(204)

    def since(self, sequence: int) -> list[StatusReport]:
        """The status reports after the one numbered ``sequence``."""
        return [report for report in self.reports if report.sequence > sequence]

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds or the timeout passes; no sleeping, woken by arrivals."""
        return await wait_until(self.changed, predicate, timeout_s)


__all__ = ["PlayedRouter", "StatusReport"]
