"""The MLC the harness plays for every IUT: its cache app, with every request the IUT sends observed.

One class for every suite (§5.1 Table 1: the MLC's resources). A drafter
writes its ``q_rows`` to the MLC before it proposes, holds a lease on them
until the verdict, and deletes them afterwards (§6.2, P1-MLC-3, P1-DRF-8); it
reads token lists (``prompt``, ``committed_tokens``) from it (P1-MLC-2). A
router names each session's commit log (P1-LOG-3), appends its fences to it
(§6.9, with a conditional operation, §6.8, P1-LOG-1), reads it back to resume a
session elsewhere and writes ``committed_tokens`` objects (P1-RTR-3, P1-RTR-6).
A verifier appends its commit records and reads ``q_rows`` (§6.3).

:class:`PlayedCache` wraps the harness's :class:`~sdcp_conformance.cache.app.CacheApp`
and keeps, for each request, what it asked (method, path, ``SDCP-Lease``) and
what it got, ordered on the harness's one timeline
(:func:`~sdcp_conformance.harness.transcript.next_sequence`), so a case can say
"the PUT of these rows completed before the proposal arrived"; with a router
:class:`~.router_history.History` it also records the object before and after
each request, so the checker can say whether a fence append was conditional
and kept the log's old content. The harness's own played verifiers append
their commit records in-process (:meth:`PlayedCache.append`), under the
store's lock, with or without fence enforcement (P1-LOG-2) and with or without
reading back (§6.8): a zombie verifier skips the read-back. The cache's fault
plan (:attr:`PlayedCache.faults`) slows, holds or fails requests where a case
says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from sdcp_conformance.cache.app import LEASE_HEADER, CacheApp
from sdcp_conformance.cache.commit_log import FenceRecord, LogRecord, encode_record, parse_log
from sdcp_conformance.cache.faults import FaultPlan
from sdcp_conformance.cache.store import ObjectStore
from sdcp_conformance.harness.arrivals import wait_until
from sdcp_conformance.harness.roles.router_history import CacheSeen, History
from sdcp_conformance.harness.self_check import register
from sdcp_conformance.harness.transcript import CaseTranscript, next_sequence
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.errors import MalformedMessage
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


@dataclass(frozen=True)
class Appended:
    """The outcome of a played verifier's append (§6.8)."""

    stored: bool
    """The record is in the log (an enforcing MLC refuses one below a fence)."""
    fenced: bool
    """A fence with a higher epoch precedes it: a correct verifier treats the append as failed."""


class PlayedCache:
    """The cache handler with observations, and the object access the played roles and the cases need.

    ``base_uri``: where it is served (cache-refs elsewhere are not its objects)."""

    def __init__(self, base_uri: str, *, clock: Callable[[], float] = time.time) -> None:
        self.app = CacheApp(clock=clock)
        self.faults: FaultPlan = self.app.faults
        """What the cases switch: requests slowed, held or failed. Each fault armed is registered with the case
        that armed it, which it must fire in unless armed with ``must_fire=False`` (:mod:`~..self_check`)."""
        self.faults.on_arm = register
        self.store: ObjectStore = self.app.store
        self.base_uri = base_uri
        self.clock = clock
        """The clock leases are measured with (the cache app's)."""
        self._base_path = urlsplit(base_uri).path
        self.transcript: Callable[[], CaseTranscript | None] | None = None
        """Where its exchanges are recorded (None where the environment records them itself)."""
        self.history: History | None = None
        """The router suite's history: every request, with the object before and after it."""
        self.events: list[CacheEvent] = []
        self._by_path: dict[str, list[CacheEvent]] = {}
        """The same events by object path: a proposal's review asks for its rows' events, whatever came before."""
        self.changed = asyncio.Event()
        self.bandwidth_bytes_per_s: float | None = None
        """When set, a PUT takes as long as its body needs at this bandwidth: the scarce "cache bandwidth currently
        available" of §6.2, which a fixed delay would not model (it does not grow with M)."""

    # ------------------------------------------------------------------ what the cases switch

    @property
    def enforce_fences(self) -> bool:
        """P1-LOG-2: an append below a fence is refused (409); a case may play an MLC that does not enforce it."""
        return self.app.enforce_fences

    @enforce_fences.setter
    def enforce_fences(self, enforcing: bool) -> None:
        self.app.enforce_fences = enforcing

    def reset(self) -> None:
        """End of a case: every fault and hold let go, fences enforced, the bandwidth unlimited."""
        self.app.faults.disarm()
        self.app.enforce_fences = True
        self.bandwidth_bytes_per_s = None

    # ------------------------------------------------------------------ HTTP

    async def __call__(self, request: Request) -> Response:
        if self.bandwidth_bytes_per_s and request.method.upper() == "PUT" and request.body:
            await asyncio.sleep(len(request.body) / self.bandwidth_bytes_per_s)  # simulated transfer time
        before = self._data(request.path) if self.history is not None else None
        self.faults.meet(request.method, request.path)  # the evidence that an armed fault had its chance
        response = await self.app(request)
        header = request.header(LEASE_HEADER)
        lease = int(header) if header is not None and header.strip().isdigit() else None
        loop = asyncio.get_running_loop()
        event = CacheEvent(next_sequence(), loop.time(), request.method.upper(), request.path, response.status, lease,
                           header, len(request.body), request.peer_identity)
        self.events.append(event)
        self._by_path.setdefault(event.path, []).append(event)
        if self.history is not None:
            self.history.add(CacheSeen(
                at=loop.time(), method=request.method, path=request.path, peer=request.peer_identity,
                if_match=request.header("if-match"), if_none_match=request.header("if-none-match"),
                status=response.status, before=before, after=self._data(request.path),
                body=request.body if request.method == "PUT" else b""))
        transcript = self.transcript() if self.transcript is not None else None
        if transcript is not None:
            note = f"SDCP-Lease: {header}" if header is not None else ""
            if response.fault is not None:
                note = f"{note}; fault: {response.fault.value}".lstrip("; ")
            transcript.record("from-iut", "cache", request.method, request.path, request.body, response.status,
                              response.body, content_type=response.header("content-type"), note=note)
        self.changed.set()
        return response

    # ------------------------------------------------------------------ what the IUT asked

    def of(self, uri_or_path: str, method: str | None = None) -> list[CacheEvent]:
        """Events for one object (given by URI or path), optionally of one method."""
        path = urlsplit(uri_or_path).path if "://" in uri_or_path else uri_or_path
        return [event for event in self._by_path.get(path, ())
                if method is None or event.method == method.upper()]

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds or the timeout passes; woken by each recorded request."""
        return await wait_until(self.changed, predicate, timeout_s)

    # ------------------------------------------------------------------ objects

    def path_of(self, uri: str) -> str | None:
        """The object path of a cache-ref on this MLC (P1-MLC-1); ``None`` for a URI elsewhere."""
        parts = urlsplit(uri)
        base = urlsplit(self.base_uri)
        if parts.scheme != "https" or parts.netloc != base.netloc or not parts.path.startswith(self._base_path):
            return None
        return parts.path

    def _data(self, path: str) -> bytes | None:
        stored = self.app.store.get(path, now=self.clock())
        return None if stored is None else stored.data

    def stored(self, uri: str) -> bytes | None:
        """The object's bytes as the cache holds them now (None when missing or its lease has passed)."""
        return self._data(urlsplit(uri).path)

    def data(self, uri: str) -> bytes | None:
        """Like :meth:`stored`, for a cache-ref that must be on this MLC (None for one elsewhere)."""
        path = self.path_of(uri)
        return None if path is None else self._data(path)

    def put(self, uri: str, data: bytes) -> None:
        """Store an object directly (as another party would have written it), with no lease."""
        self.app.store.put(urlsplit(uri).path, data, lease_ms=None, now=self.clock())

    def log(self, uri: str) -> tuple[LogRecord, ...]:
        """The commit log's records (empty when the object is missing, elsewhere or not a log)."""
        data = self.data(uri)
        if not data:
            return ()
        try:
            return tuple(parse_log(data))
        except MalformedMessage:
            return ()

    def tokens(self, uri: str) -> tuple[int, ...] | None:
        """A token-list object (P1-MLC-2: "a CBOR array of uint"); ``None`` when missing or not one."""
        data = self.data(uri)
        if data is None:
            return None
        try:
            value = decode(data)
        except MalformedMessage:
            return None
        if not isinstance(value, list) or not all(type(token) is int and token >= 0 for token in value):
            return None
        return tuple(value)

    def put_tokens(self, uri: str, tokens: tuple[int, ...] | list[int]) -> None:
        path = self.path_of(uri)
        if path is None:
            raise ValueError(f"{uri} is not on the harness's MLC")
        self.app.store.put(path, encode(list(tokens)), lease_ms=None, now=self.clock())

    def append(self, uri: str, record: LogRecord, *, read_back: bool = True) -> Appended:
        """A played verifier's conditional append, atomic under the store's lock (P1-LOG-1, P1-LOG-2)."""
        path = self.path_of(uri)
        if path is None:
            return Appended(False, False)
        store = self.app.store
        with store.lock:
            current = self._data(path) or b""
            try:
                prior = parse_log(current) if current else []
            except MalformedMessage:
                return Appended(False, False)
            higher = [r for r in prior if isinstance(r, FenceRecord) and r.epoch > record.epoch]
            if higher and self.app.enforce_fences:  # P1-LOG-2: "answers 409"
                return Appended(False, True)
            store.put(path, current + encode_record(record), lease_ms=None, now=self.clock())
        # §6.8: "read the log after its conditional append and treat its append as failed if a fence record
        # with a higher epoch precedes its own record" — a zombie does not look.
        return Appended(True, bool(higher) and read_back)


__all__ = ["Appended", "CacheEvent", "PlayedCache"]
