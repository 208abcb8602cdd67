"""The MLC the harness plays for a router under test: its cache app, every request observed, and the
played verifiers' appends.

The router names each session's commit log (P1-LOG-3), appends its fences to
it (§6.9, with a conditional operation, §6.8, P1-LOG-1), reads it back to
resume a session elsewhere and writes ``committed_tokens`` objects (P1-RTR-3,
P1-RTR-6). :class:`ObservedMlc` wraps the harness's
:class:`~sdcp_conformance.cache.app.CacheApp` and records each request with
the object before and after it, so the checker can say whether a fence append
was conditional and kept the log's old content. The harness's own verifiers
append their commit records in-process (:meth:`ObservedMlc.append`), under the
store's lock, with or without fence enforcement (P1-LOG-2) and with or
without reading back (§6.8): a zombie verifier skips the read-back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.commit_log import FenceRecord, LogRecord, encode_record, parse_log
from sdcp_conformance.harness.roles.router_history import CacheSeen, History
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.transport.types import Request, Response


@dataclass(frozen=True)
class Appended:
    """The outcome of a played verifier's append (§6.8)."""

    stored: bool
    """The record is in the log (an enforcing MLC refuses one below a fence)."""
    fenced: bool
    """A fence with a higher epoch precedes it: a correct verifier treats the append as failed."""


class ObservedMlc:
    """The cache handler with observations, and the object access the played roles need."""

    def __init__(self, app: CacheApp, history: History, base_uri: str, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.app = app
        self._clock = clock
        self.history = history
        self.base_uri = base_uri
        self._base_path = urlsplit(base_uri).path

    async def __call__(self, request: Request) -> Response:
        before = self._data(request.path)
        response = await self.app(request)
        self.history.add(CacheSeen(
            at=asyncio.get_running_loop().time(), method=request.method, path=request.path,
            peer=request.peer_identity, if_match=request.header("if-match"),
            if_none_match=request.header("if-none-match"), status=response.status, before=before,
            after=self._data(request.path), body=request.body if request.method == "PUT" else b""))
        return response

    # ------------------------------------------------------------------ objects

    def path_of(self, uri: str) -> str | None:
        """The object path of a cache-ref on this MLC (P1-MLC-1); ``None`` for a URI elsewhere."""
        parts = urlsplit(uri)
        base = urlsplit(self.base_uri)
        if parts.scheme != "https" or parts.netloc != base.netloc or not parts.path.startswith(self._base_path):
            return None
        return parts.path

    def _data(self, path: str) -> bytes | None:
        stored = self.app.store.get(path, now=self._clock())
        return None if stored is None else stored.data

    def data(self, uri: str) -> bytes | None:
        path = self.path_of(uri)
        return None if path is None else self._data(path)

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
        self.app.store.put(path, encode(list(tokens)), lease_ms=None, now=self._clock())

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
            store.put(path, current + encode_record(record), lease_ms=None, now=self._clock())
        # §6.8: "read the log after its conditional append and treat its append as failed if a fence record
        # with a higher epoch precedes its own record" — a zombie does not look.
        return Appended(True, bool(higher) and read_back)


__all__ = ["Appended", "ObservedMlc"]
