"""The project's HTTP/2 client, on h2: the harness's client towards the IUT and the reference roles' client.

One client, one behaviour (issues 12 and 16). Measured
(benchmarks/bench_transport.py): httpx spends most of a small request in its
own layers, so this client talks h2 directly: one TLS 1.3 connection, many
concurrent streams, the TLS profile of :mod:`.tls`. What it guarantees:

* **Stages.** A failure says where the conversation broke (:class:`~.failures.Stage`):
  TCP (connect and TLS are separate steps, so a handshake that stalls after
  TCP connected is told apart from a port that does not answer), the TLS alert
  or certificate error by name, the negotiated ALPN, the HTTP/2 SETTINGS
  (:meth:`H2Client.connect` waits for them, which a server refusing our client
  certificate never sends), GOAWAY and RST_STREAM error codes by name, and for
  a half-received response its status, content-length and bytes received.
  Every connection's TLS version and ALPN are recorded (:attr:`H2Client.connections`).
* **Graceful GOAWAY** (RFC 9113 §6.8): streams ≤ ``last_stream_id`` complete on
  the old connection, which closes once they are done; new requests go to a
  fresh connection; requests above ``last_stream_id``, or refused with
  REFUSED_STREAM, or still waiting for a stream when their connection ended,
  were never processed and are resent there whatever their
  method (§8.7), until the deadline while the server serves others, at most
  :data:`MAX_UNPROCESSED_RESENDS` times where it served nothing. An error
  GOAWAY fails the streams it leaves unanswered. (h2 itself would close the
  whole connection on GOAWAY: :mod:`.h2state`.)
* **Bounded reads.** A response declaring more than ``max_response_bytes`` is
  refused at its headers, one exceeding it while streaming is cut there (the
  stream reset at once); across the streams of a connection at most
  :data:`CONNECTION_BUFFER_BUDGET` body bytes are held before flow control
  stops the peer. Frames are length-checked at their header (:mod:`.h2state`).
* **Deadlines.** Each attempt has one deadline (``timeout=`` per request, or
  :attr:`Timeouts.attempt`), moved later by what the caller's ``extension``
  grants when it comes (the time the harness itself could not run); on expiry
  the stream is reset (CANCEL) and the stage is the step this request was
  waiting on (its own dial, or the one it waited for: never another's). A
  response whose declared content-length has fully arrived is complete, even
  without its END_STREAM yet (D-H2C-8, P1-JUDGE-5).

Hot path (profiled): header lists are normalised and validated once with h2's
own functions (:meth:`H2Client._request_headers`) and HPACK blocks reused
(:mod:`.hpack_reuse`); inbound headers (the peer under test) are still
validated by h2.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import h2.exceptions
from h2.errors import ErrorCodes
from h2.utilities import HeaderValidationFlags, normalize_outbound_headers, validate_outbound_headers
from hpack.struct import Header

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.exchange import (
    MAX_ATTEMPTS,
    MAX_CONNECTION_RECORDS,
    MAX_RESPONSE_BYTES,
    AttemptDeadline,
    ClientResponse,
    Extension,
    RetryingRequests,
    Timeouts,
)
from sdcp_conformance.transport.failures import (
    ConnectionInfo,
    FailureKind,
    Stage,
    TransportFailure,
    classify_tls_error,
)
from sdcp_conformance.transport.h2client_connection import (
    CONNECTION_BUFFER_BUDGET,
    ClientConnection,
    ClientStream,
    Unprocessed,
)
from sdcp_conformance.transport.tls import client_ssl_context

MAX_STREAMS = 100
"""D-H2C-1: concurrent streams per connection, RFC 9113 §6.5.2's recommended minimum."""
HEADER_CACHE_SIZE = 256
"""Distinct request header lists (method, path, length, headers) kept normalised and validated."""
MAX_UNPROCESSED_RESENDS = 3
"""D-H2C-2: how often a request the peer never processed (GOAWAY above it, REFUSED_STREAM) is resent on a fresh
connection that served nothing (answered no stream, and its GOAWAY named none) before its failure stands: a server
that refuses everything is not waited on forever. A refusal by a connection that served other streams is a server
shedding connections while it works (a GOAWAY every N requests with more than N in flight): the request is resent
until the attempt's deadline, however often. Such a resend is not an attempt in D-CLI-2's sense (the peer says it
never saw the request), so it happens whatever the method and whatever ``max_attempts`` is, within the attempt's
deadline."""
MAX_CONNECTIONS = 8
"""D-H2C-5: when the server's SETTINGS_MAX_CONCURRENT_STREAMS leaves no stream free, a request opens another
connection (up to this many at once) instead of waiting for one, as Go's HTTP/2 transport does by default. A
server that allows one stream at a time otherwise keeps a request that must overtake a held one (a different
proposal while round 1 is in flight, §6.3) from ever reaching it, and the harness would judge the server for a
request it never got. RFC 9113 §9.1 discourages a second connection; with one stream there is no other way to
have two requests in flight. A server that turns such a connection away before serving on it (a limit on
connections per client) is not asked again: its requests wait for a stream."""

_REQUEST_FLAGS = HeaderValidationFlags(
    is_client=True, is_trailer=False, is_response_header=False, is_push_promise=False
)
"""What h2 validates a client's initial HEADERS against (not trailers, not a response, not a push)."""


class _Dial:
    """One connection being opened: the step it is at, for any request that waits on it."""

    __slots__ = ("phase",)

    def __init__(self) -> None:
        self.phase = Stage.TCP_TIMEOUT


_DIAL_ORDER = (Stage.TCP_TIMEOUT, Stage.TLS_STALLED, Stage.H2_PREFACE)


class _Attempt:
    """What one attempt is waiting on: the dials it waited for (another request's, then its own), then its stream."""

    __slots__ = ("connection", "dials", "stream", "stream_id")

    def __init__(self) -> None:
        self.dials: list[_Dial] = []
        self.connection: ClientConnection | None = None
        self.stream: ClientStream | None = None
        self.stream_id = 0


def _abandon(connection: ClientConnection, sock: socket.socket) -> None:
    """Drop a connection whose opening failed or was cancelled, socket and transport together.

    Once ``sock`` is handed to ``create_connection`` its transport owns it. When the opening is cancelled just after
    the TLS handshake completed, asyncio only *closes* that transport: a TLS close_notify exchange that keeps the
    socket registered for up to 30 s. Closing ``sock`` under it would free its descriptor number for the next socket,
    which asyncio then refuses ("File descriptor N is used by transport"). So the transport is aborted first (the
    socket leaves the event loop at once), and only then is the socket closed (a no-op for the transport later).
    """
    connection.usable = False
    if connection.transport is not None:
        connection.transport.abort()
    sock.close()


def _unsent(connection: ClientConnection) -> Unprocessed:
    """D-H2C-7: a GOAWAY came, or the connection ended, while this request waited for a stream on it. It was never
    sent, so never processed there, whatever ended the connection (a graceful GOAWAY, a close without one, a
    protocol error after other streams): it is resent on a fresh connection as D-H2C-2 says, and only if those
    fail too does the failure stand, with the stage of what ended them (a server that says GOAWAY naming no stream
    on every connection refuses everything; it is judged at the GOAWAY, not for a lost connection)."""
    ended = connection.failure
    if connection.goaway is not None:
        name, last = connection.goaway
        stage, words = Stage.GOAWAY, f"GOAWAY({name}, last_stream_id={last}) came before the request was sent"
    elif ended is not None:
        stage = ended.stage or Stage.CONNECTION_LOST
        words = f"the connection ended before the request was sent ({ended.detail})"
    else:
        stage, words = Stage.GOAWAY, "the connection went away before the request was sent"
    unsent = Unprocessed(FailureKind.CONNECTION_LOST, words, stage=stage, connection=connection.info)
    unsent.progressed = connection.progressed
    return unsent


class H2Client(RetryingRequests):
    """``async with H2Client(base_uri, cert, key, ca) as c: await c.request("POST", "proposals", b)``."""

    def __init__(
        self,
        base_uri: str,
        cert: Path | None,
        key: Path | None,
        ca: Path,
        *,
        timeouts: Timeouts | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        parts = urlsplit(base_uri)
        if parts.scheme != "https" or parts.hostname is None:
            raise InvalidArgument(f"base URI {base_uri!r} needs https and a host")
        if max_response_bytes < 0:
            raise InvalidArgument(f"max_response_bytes must not be negative, not {max_response_bytes}")
        self.base_uri = base_uri if base_uri.endswith("/") else base_uri + "/"
        self._host, self._port = parts.hostname, parts.port or 443
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/") + "/"
        self._ssl: ssl.SSLContext = client_ssl_context(cert, key, ca)
        self.timeouts = timeouts or Timeouts()
        self.max_attempts = max_attempts
        self.max_response_bytes = max_response_bytes
        self._connection: ClientConnection | None = None
        self._retired: set[ClientConnection] = set()
        self._overflow: list[ClientConnection] = []
        """Connections opened because the main one had no free stream (:data:`MAX_CONNECTIONS`)."""
        self._overflow_opening = 0
        self._overflow_refused = False
        self._connecting = asyncio.Lock()
        self._dialing: _Dial | None = None
        """The main connection being opened, if one is: a request waiting for it stalls where it stalls."""
        self._slots = asyncio.Semaphore(MAX_STREAMS)
        self._header_lists: dict[tuple[Any, ...], tuple[Header, ...]] = {}
        self.connections: list[ConnectionInfo] = []
        """Every connection opened (the newest :data:`MAX_CONNECTION_RECORDS`): number, TLS version, ALPN."""
        self.connections_opened = 0

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        for old in [*self._retired, *self._overflow, *([connection] if connection is not None else [])]:
            old.close()
        self._retired.clear()
        self._overflow.clear()

    async def connect(self) -> ConnectionInfo:
        """Open the connection now (requests otherwise open it on demand); waits for the server's SETTINGS."""
        return (await self._usable_connection(_Attempt())).info

    async def _attempt(self, method: str, path: str, body: bytes, headers: dict[str, str] | None,
                       deadline_s: float, extension: Extension | None) -> ClientResponse:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_s
        sent, refused_idle, on = 0, 0, set()
        while True:
            try:
                return await self._exchange(method, path, body, headers, deadline, deadline_s, extension)
            except Unprocessed as unprocessed:
                sent += 1
                refused_idle += not unprocessed.progressed
                on.add(unprocessed.connection.number if unprocessed.connection is not None else 0)
                if refused_idle > MAX_UNPROCESSED_RESENDS or loop.time() >= deadline:
                    stage = unprocessed.stage or Stage.GOAWAY
                    raise TransportFailure.at(stage, f"{method} {path}: {unprocessed.detail}; tried {sent} times on "
                                              f"{len(on)} connection(s), never processed",
                                              connection=unprocessed.connection, deadline_s=deadline_s
                                              ) from unprocessed

    async def _exchange(self, method: str, path: str, body: bytes, headers: dict[str, str] | None,
                        deadline: float, deadline_s: float, extension: Extension | None) -> ClientResponse:
        attempt = _Attempt()

        def answered() -> bool:
            stream, connection = attempt.stream, attempt.connection
            if stream is not None and stream.done.done():
                return True
            if stream is not None and connection is not None and stream.complete_by_length():
                connection.complete(attempt.stream_id)  # D-H2C-8: sets stream.done at once
                return True
            return False

        patience = AttemptDeadline(extension, answered)
        try:
            async with asyncio.timeout(None) as timer, self._slots:
                patience.arm(timer, deadline)
                connection = attempt.connection = await self._usable_connection(attempt)
                connection = attempt.connection = await self._with_free_stream(connection)
                await connection.stream_slot()
                attempt.stream_id, attempt.stream = self._open_stream(connection, method, path, body, headers)
                await self._upload(connection, attempt.stream_id, attempt.stream, body)
                await attempt.stream.done
        except (TimeoutError, asyncio.CancelledError) as exc:
            if attempt.connection is not None and attempt.stream_id:  # given up: reset the stream, never left to
                attempt.connection.cancel(attempt.stream_id)          # fail unheard later
            if isinstance(exc, asyncio.CancelledError) or not patience.expired:  # the caller gave up
                raise
            raise self._timeout(method, path, attempt, deadline_s + patience.granted) from exc
        finally:
            patience.disarm()
        stream = attempt.stream
        assert stream is not None and attempt.connection is not None
        return ClientResponse(stream.status, tuple(stream.headers), b"".join(stream.body),
                              connection=attempt.connection.info)

    def _timeout(self, method: str, path: str, attempt: _Attempt, deadline_s: float) -> TransportFailure:
        """Name the step that was waiting when the deadline expired: this request's own (the dial it waited on,
        its stream), never another request's."""
        what = f"{method} {path}: no"
        connection, stream = attempt.connection, attempt.stream
        if connection is None:
            # The furthest step any dial it waited on reached: a request that waited on another's stalled TLS
            # handshake and had just begun its own TCP connect when its deadline came was stalled by that handshake.
            phase = max((dial.phase for dial in attempt.dials), key=_DIAL_ORDER.index, default=Stage.TCP_TIMEOUT)
            words = {Stage.TCP_TIMEOUT: "TCP connection", Stage.TLS_STALLED: "TLS handshake (TCP connected)",
                     Stage.H2_PREFACE: "HTTP/2 SETTINGS from the server (TLS done)"}[phase]
            return TransportFailure.at(phase, f"{what} {words} within {deadline_s:g} s", kind=FailureKind.TIMEOUT,
                                       deadline_s=deadline_s)
        info = connection.info
        if stream is None:
            allowed, open_ = connection.h2.remote_settings.max_concurrent_streams, connection.h2.open_outbound_streams
            why = (f"the server's SETTINGS_MAX_CONCURRENT_STREAMS is {allowed}, {open_} open" if open_ >= allowed
                   else f"{MAX_STREAMS} in use")
            return TransportFailure.at(Stage.HEADERS_TIMEOUT, f"{what} free stream within {deadline_s:g} s "
                                       f"({why})", connection=info, deadline_s=deadline_s)
        return stream.stalled(f"{method} {path}", deadline_s, info)

    async def _usable_connection(self, attempt: _Attempt) -> ClientConnection:
        connection = self._connection
        if connection is not None and connection.usable:
            return connection  # the hot path: no lock
        if self._dialing is not None:  # waiting for the lock is waiting on that connection's handshake
            attempt.dials.append(self._dialing)
        async with self._connecting:
            connection = self._connection
            if connection is None or not connection.usable:
                if connection is not None:
                    # Its streams may still be answered (graceful GOAWAY): let them finish there.
                    connection.retire()
                    if connection.streams:
                        self._retired.add(connection)
                self._retired = {old for old in self._retired if old.streams}
                self._connection = None
                dial = self._dialing = _Dial()
                attempt.dials.append(dial)
                try:
                    connection = self._connection = await self._open(dial)
                finally:
                    self._dialing = None
            return connection

    async def _with_free_stream(self, main: ClientConnection) -> ClientConnection:
        """``main`` if it has a stream free, else a connection that has one, opened if need be (D-H2C-5)."""
        if main.has_free_stream():
            return main
        for old in [old for old in self._overflow if not old.usable]:
            if old.goaway is not None and not old.progressed:
                self._overflow_refused = True  # turned away before serving: no more connections asked of it
            old.retire()
            if old.streams:
                self._retired.add(old)
            self._overflow.remove(old)
        free = next((old for old in self._overflow if old.has_free_stream()), None)
        if free is not None:
            return free
        if (self._overflow_refused or main.h2.remote_settings.max_concurrent_streams < 1
                or 1 + len(self._overflow) + self._overflow_opening >= MAX_CONNECTIONS):
            return main
        self._overflow_opening += 1
        try:
            extra = await self._open(_Dial())
        except TransportFailure:
            self._overflow_refused = True
            return main
        finally:
            self._overflow_opening -= 1
        self._overflow.append(extra)
        return extra if extra.has_free_stream() else main

    async def _open(self, dial: _Dial) -> ClientConnection:
        """TCP, then TLS, then the server's SETTINGS: each step its own stage, kept in ``dial``."""
        loop = asyncio.get_running_loop()
        number = self.connections_opened + 1
        dial.phase = Stage.TCP_TIMEOUT
        try:
            async with asyncio.timeout(self.timeouts.connect):
                sock = await self._tcp_connect()
                dial.phase = Stage.TLS_STALLED
                connection = ClientConnection(number, self.max_response_bytes)
                try:
                    await loop.create_connection(
                        lambda: connection, sock=sock, ssl=self._ssl,
                        server_hostname=self._host, ssl_handshake_timeout=self.timeouts.connect + 1.0,
                    )
                    self.connections_opened = number
                    dial.phase = Stage.H2_PREFACE
                    await connection.ready  # the server's SETTINGS: it accepted our certificate
                except BaseException:
                    _abandon(connection, sock)
                    raise
        except TimeoutError as exc:
            words = {Stage.TCP_TIMEOUT: "TCP connect", Stage.TLS_STALLED: "TLS handshake after TCP connected",
                     Stage.H2_PREFACE: "the server's HTTP/2 SETTINGS after TLS"}[dial.phase]
            raise TransportFailure.at(dial.phase, f"{words} did not complete within {self.timeouts.connect:g} s",
                                      kind=FailureKind.TIMEOUT, deadline_s=self.timeouts.connect) from exc
        except (ssl.SSLError, ssl.CertificateError) as exc:
            stage, evidence, words = classify_tls_error(exc)
            raise TransportFailure.at(stage, f"TLS handshake: {words}", **evidence) from exc
        except OSError as exc:
            raise TransportFailure.at(Stage.TLS_ERROR, f"the connection ended during the TLS handshake "
                                      f"({type(exc).__name__}: {exc})") from exc
        self.connections.append(connection.info)
        del self.connections[:-MAX_CONNECTION_RECORDS]
        return connection

    async def _tcp_connect(self) -> socket.socket:
        loop = asyncio.get_running_loop()
        try:
            addresses = await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise TransportFailure.at(Stage.TCP_ERROR, f"cannot resolve {self._host}: {exc}") from exc
        failure: OSError | None = None
        for family, kind, proto, _, address in addresses:
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, address)
            except OSError as exc:
                sock.close()
                failure = exc
                continue
            except BaseException:
                sock.close()
                raise
            return sock
        where = f"{self._host}:{self._port}"
        if isinstance(failure, ConnectionRefusedError):
            raise TransportFailure.at(Stage.TCP_REFUSED, f"{where} refused the TCP connection") from failure
        raise TransportFailure.at(Stage.TCP_ERROR, f"cannot connect to {where}: {failure}") from failure

    def _open_stream(
        self,
        connection: ClientConnection,
        method: str,
        path: str,
        body: bytes,
        headers: dict[str, str] | None,
    ) -> tuple[int, ClientStream]:
        if connection.failure is not None or not connection.usable:
            raise _unsent(connection)
        request_headers = self._request_headers(method, path, len(body), headers)
        try:
            stream_id = connection.h2.get_next_available_stream_id()
        except h2.exceptions.NoAvailableStreamIDError:
            connection.retire()
            exhausted = Unprocessed(FailureKind.CONNECTION_LOST, "stream ids exhausted on this connection",
                                    stage=Stage.GOAWAY)
            exhausted.progressed = connection.progressed
            raise exhausted from None
        stream = ClientStream(stream_id, connection.loop.create_future())
        connection.streams[stream_id] = stream
        connection.h2.send_headers(stream_id, request_headers, end_stream=not body)
        stream.uploaded = not body
        connection.flush_soon()
        return stream_id, stream

    def _request_headers(
        self, method: str, path: str, length: int, headers: dict[str, str] | None
    ) -> tuple[Header, ...]:
        """The request's header list, normalised and validated as h2 would, once per distinct list.

        h2's own functions do it (lower-case names, strip whitespace, drop
        connection-specific fields, never index authorization and short cookies,
        then reject what RFC 9113 forbids), so a bad list raises the same
        ProtocolError as before, only before a stream is opened.
        """
        key = (method, path, length, tuple(headers.items()) if headers else ())
        cached = self._header_lists.get(key)
        if cached is not None:
            return cached
        raw = [
            (":method", method),
            (":scheme", "https"),
            (":authority", self._authority),
            (":path", self._prefix + path.lstrip("/")),
            ("content-length", str(length)),
            *((name.lower(), value) for name, value in (headers or {}).items()),
        ]
        encoded = [(name.encode(), value.encode()) for name, value in raw]  # UTF-8, as h2 and hpack do
        normalised = normalize_outbound_headers(encoded, _REQUEST_FLAGS)  # no cookie splitting: h2's default
        checked = tuple(validate_outbound_headers(normalised, _REQUEST_FLAGS))
        if len(self._header_lists) >= HEADER_CACHE_SIZE:
            del self._header_lists[next(iter(self._header_lists))]  # the oldest
        self._header_lists[key] = checked
        return checked

    async def _upload(self, connection: ClientConnection, stream_id: int, stream: ClientStream, body: bytes) -> None:
        """Send the body within the flow-control windows; an early answer (413) ends it."""
        h2conn = connection.h2
        view = memoryview(body)
        while view and not stream.done.done():
            window = min(h2conn.local_flow_control_window(stream_id), h2conn.max_outbound_frame_size)
            if window <= 0:
                connection.flush()
                if stream.window_open is None:
                    stream.window_open = asyncio.Event()
                stream.window_open.clear()
                await stream.window_open.wait()
                continue
            chunk, view = view[:window], view[window:]
            try:
                h2conn.send_data(stream_id, bytes(chunk), end_stream=not view)
            except h2.exceptions.StreamClosedError:
                break  # the server answered and reset the stream: the answer stands
        stream.uploaded = True
        if view and stream.done.done():
            # Answered before the upload ended: tell the server we stop (RFC 9113 §8.1).
            with contextlib.suppress(h2.exceptions.ProtocolError):
                h2conn.reset_stream(stream_id, ErrorCodes.NO_ERROR)
        connection.flush_soon()


__all__ = ["CONNECTION_BUFFER_BUDGET", "MAX_STREAMS", "MAX_UNPROCESSED_RESENDS", "H2Client"]
