"""The MLC as an SDCP handler: GET/HEAD/PUT/DELETE of named objects with ETags, leases and fences.

Implements P1-MLC-1 (objects, ETags, ``If-Match`` → 412), P1-MLC-3
(``SDCP-Lease``), P1-LOG-2 (409 for an append below the highest fence, with
a switch to play a cache that does not enforce it) and P1-LOG-3
(``If-None-Match: *`` creates), on top of a store, a fault plan and a
transcript.
"""

from __future__ import annotations

import asyncio
import time

from sdcp_conformance.cache.commit_log import PutKind, check_put
from sdcp_conformance.cache.faults import ArmedFault, FaultKind, FaultPlan
from sdcp_conformance.cache.store import MemoryStore, ObjectStore, StoredObject
from sdcp_conformance.cache.transcript import Transcript
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.transport.problem import problem_response, status_problem_response
from sdcp_conformance.transport.types import Clock, Request, Response, Sleep

LEASE_HEADER = "sdcp-lease"
"""P1-MLC-3: "a writer holding a lease sends ``SDCP-Lease: <ms>`` on its PUT"."""

OBJECT_MEDIA_TYPE = "application/octet-stream"
"""D-MLC-4: objects are opaque to the cache (P1-MLC-2), so it stores no media type."""

ALLOWED_METHODS = "GET, HEAD, PUT, DELETE"



class CacheApp:
    """The cache handler; ``enforce_fences`` may be switched at any time to play either kind of MLC.

    Objects are named by the request path alone (D-MLC-5: the query string
    is ignored). ``clock`` gives the seconds leases are measured in; the
    default is wall-clock time so that leases in an SQLite store survive a
    restart. ``sleep`` serves injected delays and can be replaced in tests.
    """

    def __init__(
        self,
        store: ObjectStore | None = None,
        *,
        enforce_fences: bool = True,
        faults: FaultPlan | None = None,
        transcript: Transcript | None = None,
        clock: Clock = time.time,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.store = store if store is not None else MemoryStore()
        self.enforce_fences = enforce_fences
        self.faults = faults if faults is not None else FaultPlan()
        self.transcript = transcript
        self._clock = clock
        self._sleep = sleep

    async def __call__(self, request: Request) -> Response:
        firing = self.faults.take(request.method, request.path)
        for fault in firing:
            if fault.kind is FaultKind.HOLD and fault.gate is not None:
                # Held before handling: the effect (a read, an append) has not happened yet.
                await fault.gate.hold(request.body)
        response = self._respond(request, firing)
        for fault in firing:
            if fault.kind is FaultKind.DELAY:
                # Held back after handling: the effect has happened, the answer is late.
                await self._sleep(fault.seconds)
        if self.transcript is not None:
            labels = tuple(f"{fault.kind.value}: {fault.describe()}" for fault in firing)
            self.transcript.record(request, response, labels)
        return response

    # ------------------------------------------------------------------ dispatch

    def _respond(self, request: Request, firing: list[ArmedFault]) -> Response:
        for fault in firing:
            if fault.kind is FaultKind.DROP_LEASE:
                self.store.delete(request.path)
            if fault.kind is FaultKind.INSERT_BEFORE_PUT:
                spliced = self._insert(request, fault)
                if spliced is not None:
                    return spliced
        terminal = next((fault for fault in firing if fault.kind.terminal), None)
        if terminal is not None:
            return _injected(terminal, request.path)
        method = request.method.upper()
        if method in ("GET", "HEAD"):
            return self._get(request, with_body=method == "GET")
        if method == "PUT":
            return self._put(request)
        if method == "DELETE":
            return self._delete(request)
        response = status_problem_response(405, f"{method} is not served by the MLC")
        response.headers.append(("allow", ALLOWED_METHODS))
        return response

    def _insert(self, request: Request, fault: ArmedFault) -> Response | None:
        """FaultKind.INSERT_BEFORE_PUT: another writer's bytes arrive first (or get spliced in)."""
        with self.store.lock:
            now = self._clock()
            current = self.store.get(request.path, now)
            old = current.data if current is not None else b""
            if not fault.splice:
                self.store.put(request.path, old + fault.data, lease_ms=None, now=now)
                return None
            added = request.body[len(old):] if request.body.startswith(old) else request.body
            stored = self.store.put(request.path, old + fault.data + added, lease_ms=None, now=now)
        return Response(201 if current is None else 204, headers=[("etag", stored.etag)])

    def _get(self, request: Request, *, with_body: bool) -> Response:
        stored = self.store.get(request.path, self._clock())
        if stored is None:
            return _not_found(request.path)
        if _none_match_fails(request.header("if-none-match"), stored):
            return Response(304, headers=[("etag", stored.etag)])
        headers = [
            ("etag", stored.etag),
            ("content-type", OBJECT_MEDIA_TYPE),
            ("content-length", str(len(stored.data))),
        ]
        return Response(200, stored.data if with_body else b"", headers)

    def _put(self, request: Request) -> Response:
        lease_ms = _lease(request.header(LEASE_HEADER))
        if isinstance(lease_ms, Response):
            return lease_ms
        with self.store.lock:  # the precondition and the write are one step
            now = self._clock()
            current = self.store.get(request.path, now)
            refused = _preconditions(request, current) or self._fence_refusal(current, request)
            if refused is not None:
                return refused
            stored = self.store.put(request.path, request.body, lease_ms=lease_ms, now=now)
        return Response(201 if current is None else 204, headers=[("etag", stored.etag)])

    def _delete(self, request: Request) -> Response:
        with self.store.lock:
            current = self.store.get(request.path, self._clock())
            if current is None:
                return _not_found(request.path)
            refused = _preconditions(request, current)
            if refused is not None:
                return refused
            self.store.delete(request.path)
        return Response(204)

    def _fence_refusal(self, current: StoredObject | None, request: Request) -> Response | None:
        """P1-LOG-2: "An MLC that enforces fencing answers 409 to a PUT whose new
        record's epoch is below the highest fence epoch in the log"."""
        if not self.enforce_fences:
            return None
        check = check_put(current.data if current else None, request.body)
        if check.kind is PutKind.FENCED_APPEND and check.offending and check.fence:
            detail = f"record with epoch {check.offending.epoch} follows a fence with epoch {check.fence.epoch}"
        elif check.kind is PutKind.FENCED_REWRITE and check.fence:
            detail = f"the PUT would remove the fence with epoch {check.fence.epoch}"
        else:
            return None
        # D-MLC-6: the refusal names sdcp-stale-epoch, Table 2's "Epoch is not current".
        return problem_response(ProtocolError(ProblemType.STALE_EPOCH, detail))


# ---------------------------------------------------------------------- preconditions


def _entity_tags(value: str) -> list[str]:
    return [tag.strip() for tag in value.split(",") if tag.strip()]


def _strong_match(header: str, stored: StoredObject | None) -> bool:
    """RFC 9110 §13.1.1: If-Match uses the strong comparison; ``*`` matches any current object."""
    tags = _entity_tags(header)
    if stored is None:
        return False
    return "*" in tags or stored.etag in tags


def _none_match_fails(header: str | None, stored: StoredObject | None) -> bool:
    """RFC 9110 §13.1.2: If-None-Match is false when ``*`` is given and the object exists,
    or when a listed tag matches weakly."""
    if header is None or stored is None:
        return False
    tags = [tag.removeprefix("W/") for tag in _entity_tags(header)]
    return "*" in tags or stored.etag in tags


def _preconditions(request: Request, current: StoredObject | None) -> Response | None:
    """RFC 9110 §13.2.2 order: If-Match first, then If-None-Match; 412 when either is false."""
    if_match = request.header("if-match")
    if if_match is not None and not _strong_match(if_match, current):
        return _precondition_failed(current, "If-Match does not match the current ETag")
    if _none_match_fails(request.header("if-none-match"), current):
        return _precondition_failed(current, "If-None-Match matches the current object")
    return None


def _precondition_failed(current: StoredObject | None, detail: str) -> Response:
    response = status_problem_response(412, detail)
    if current is not None:
        response.headers.append(("etag", current.etag))
    return response


def _lease(value: str | None) -> int | Response | None:
    if value is None:
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        return status_problem_response(400, f"SDCP-Lease must be milliseconds, not {value!r}")
    return int(text)


# ---------------------------------------------------------------------- responses


def _not_found(path: str) -> Response:
    return status_problem_response(404, f"no object at {path}")


def _injected(fault: ArmedFault, path: str) -> Response:
    if fault.kind is FaultKind.MISSING_GET:
        return _not_found(path)  # indistinguishable from a real miss on purpose
    if fault.transport is not None:
        # The server commits the fault instead of answering; 503 is what a
        # server that cannot commit it would send.
        return Response(503, fault=fault.transport)
    status = fault.status or 503
    return status_problem_response(status, f"{fault.kind.value} injected by the harness")


__all__ = ["ALLOWED_METHODS", "LEASE_HEADER", "OBJECT_MEDIA_TYPE", "CacheApp"]
