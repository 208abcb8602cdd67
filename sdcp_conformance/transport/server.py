"""An asyncio HTTP/2 server over TLS 1.3 with required client certificates, built on h2.

Why h2 and not an ASGI server (measured with hypercorn 0.18, uvicorn 0.54, h2 4.4):

* hypercorn puts no client certificate in the ASGI scope, hard-codes TLS ≥ 1.2,
  lets a client without ALPN fall through to HTTP/1.1 and sends GOAWAY after
  1,000 requests by default; fixing that means subclassing and patching its
  TCP server. Answering an HTTP/2 request before its whole body was read broke
  the connection inside hypercorn (a KeyError), which rules out an honest 413.
* uvicorn speaks HTTP/2 only through the pre-1.0 ``zttp``.
* h2 is sans-I/O: this module owns the socket, so the peer certificate's URI
  SAN reaches the handler (P1-ID-1), TLS 1.2 and HTTP/1.1 are refused
  (P1-TLS-1), a body over the limit is answered 413 and the stream reset at
  once, and the faults the harness plays (RST_STREAM, GOAWAY, abrupt close)
  are one call each.

One client must not hold the server open, fill its memory or slow the others
(issue 12): every limit is in :class:`~.limits.ServerLimits` — idle, preface,
header, body and send timeouts, a stream limit, buffering budgets per
connection and server-wide (enforced by withholding flow-control credit),
frames checked at their header (:mod:`.h2state`), and rate limits on
RST_STREAM, SETTINGS, PING, empty DATA and stream errors that end the
connection with GOAWAY(ENHANCE_YOUR_CALM). ``max_requests`` sends a graceful
GOAWAY every N requests, as hypercorn and nginx do.

The handler interface is :mod:`sdcp_conformance.transport.types`; a handler
raising :class:`~sdcp_conformance.protocol.errors.ProtocolError` gets its problem
document (P1-ERR-1), any other exception a 500 problem, and the server lives on.

D-SRV-4: the server checks transport, not media types: requests carry
``application/sdcp+cbor`` by §5.1, but the cache role serves raw bytes, so
each handler checks the content type it expects.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.server_connection import ServerConnection
from sdcp_conformance.transport.tls import serve_tls, server_ssl_context
from sdcp_conformance.transport.types import Handler

log = logging.getLogger(__name__)


DEFAULT_LIMITS = ServerLimits()
"""The limits of a :class:`ServerConfig` that names none (a test may swap this for the whole process)."""


def default_limits() -> ServerLimits:
    return DEFAULT_LIMITS


@dataclass(frozen=True)
class ServerConfig:
    """Where and how to serve; certificate paths come from :mod:`.pki`, every limit from ``limits``."""

    cert: Path
    key: Path
    ca: Path
    host: str = "127.0.0.1"
    port: int = 0
    require_client_cert: bool = True
    label: str = ""
    """The party the server plays (``verifier-1``, ``cache``), for messages about the clients it refused."""
    limits: ServerLimits = field(default_factory=default_limits)
    shutdown_grace: float = 2.0
    """Seconds :meth:`H2Server.stop` waits for TLS close_notify before aborting sockets."""

    def ssl_context(self) -> ssl.SSLContext:
        return server_ssl_context(self.cert, self.key, self.ca, require_client_cert=self.require_client_cert)


@dataclass
class ServerStats:
    """Counters a test or benchmark can read (updated on the server's event loop)."""

    connections: int = 0
    requests: int = 0
    http1_refused: int = 0
    bodies_refused: int = 0
    """Requests answered 413 (over ``max_body``) or 503 (over the server-wide budget)."""
    bodies_timed_out: int = 0
    """Requests answered 408: the body did not complete within ``body_timeout_s``."""
    largest_body_buffered: int = 0
    buffered_peak: int = 0
    """Most request-body bytes buffered at once, across all connections."""
    handler_errors: int = 0
    streams_refused: int = 0
    """Streams above a graceful GOAWAY's last_stream_id, refused unprocessed (REFUSED_STREAM)."""
    graceful_goaways: int = 0
    enhance_your_calm: int = 0
    """Connections closed with GOAWAY(ENHANCE_YOUR_CALM) for exceeding a rate limit."""
    calm_reasons: dict[str, int] = field(default_factory=dict)
    timed_out: dict[str, int] = field(default_factory=dict)
    """Connections closed by a timeout, by which (``preface``, ``idle``, ``header``, ``drain``)."""
    sends_timed_out: int = 0
    frame_size_refused: int = 0

    def count_handler_error(self) -> None:
        """A handler raised (its request was answered 500, :func:`~.problem.call_handler`)."""
        self.handler_errors += 1


@dataclass(frozen=True)
class RefusedConnection:
    """A client the server refused for how it spoke, not for what it asked: a failed TLS handshake, HTTP/1.1,
    an HTTP/2 protocol error. A harness playing a party for an IUT names these as the cause when nothing of
    the IUT's arrives (a drafter offering TLS 1.2 never proposes)."""

    at: float
    """``time.monotonic()`` when it was refused."""
    stage: str
    """``tls-handshake``, ``http/1.1`` or ``h2-protocol``."""
    detail: str
    identity: str | None = None
    """The client certificate's URI SAN, where the handshake got that far."""

    def describe(self) -> str:
        who = f" ({self.identity})" if self.identity else ""
        return f"{self.stage}{who}: {self.detail}"


REFUSALS_KEPT = 64
"""The most recent refusals a server keeps (a client retrying a bad handshake forever must not grow memory)."""
_NOT_THE_CLIENTS_FAULT = (TimeoutError, ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError)
"""A handshake that timed out or whose socket dropped says nothing about how the client speaks TLS."""


def handshake_words(error: BaseException) -> str:
    """What a failed server-side handshake says about the client, in words."""
    reason = str(getattr(error, "reason", "") or "")
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"the client's certificate failed verification: {error.verify_message or error}"
    if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return "the client presented no certificate (§5.1: mutual certificate authentication is REQUIRED)"
    if reason in ("UNSUPPORTED_PROTOCOL", "NO_PROTOCOLS_AVAILABLE"):
        return f"the client did not offer TLS 1.3 (OpenSSL: {reason}; §5.1 requires TLS 1.3)"
    if reason == "HTTP_REQUEST":
        return "the client spoke plain-text HTTP, not TLS (§5.1 requires TLS 1.3)"
    if reason == "WRONG_VERSION_NUMBER":
        return "the client's first bytes are not a TLS record (plain text, or not TLS; §5.1 requires TLS 1.3)"
    if reason.startswith(("TLSV1_ALERT_", "SSLV3_ALERT_")):
        return f"the client ended the handshake with alert {reason.split('ALERT_', 1)[1].lower()}"
    return f"{type(error).__name__}: {reason or error}"


def listening_port(server: asyncio.Server | None) -> int:
    """The port a started listener is bound to (InvalidArgument if it is not started)."""
    if server is None:
        raise InvalidArgument("the server is not started")
    return int(server.sockets[0].getsockname()[1])


class H2Server:
    """Serves one :data:`Handler` over HTTP/2 + TLS 1.3 (+ mTLS by default) on asyncio."""

    def __init__(self, handler: Handler, config: ServerConfig) -> None:
        self.handler = handler
        self.config = config
        self.limits = config.limits
        self.stats = ServerStats()
        self.buffered = 0
        """Request-body bytes buffered across all connections (for ``server_buffer_budget``)."""
        self._ssl = config.ssl_context()
        self._server: asyncio.Server | None = None
        self._connections: set[ServerConnection] = set()
        self._starved: set[ServerConnection] = set()
        self._per_identity: dict[str | None, int] = {}
        self.refused: collections.deque[RefusedConnection] = collections.deque(maxlen=REFUSALS_KEPT)
        """The clients refused for how they spoke, most recent last."""

    async def start(self) -> None:
        # The TLS layer sends the alert of a refused handshake (asyncio's own would just close).
        self._server = await serve_tls(lambda: ServerConnection(self), self._ssl, self.config.host, self.config.port,
                                       handshake_timeout=self.limits.handshake_timeout_s,
                                       shutdown_timeout=self.config.shutdown_grace,
                                       on_handshake_failed=self._handshake_failed)

    def _handshake_failed(self, error: BaseException | type[BaseException]) -> None:
        # asyncio passes the class ConnectionResetError itself for a socket that ended mid-handshake
        kind = error if isinstance(error, type) else type(error)
        if not issubclass(kind, _NOT_THE_CLIENTS_FAULT) and isinstance(error, BaseException):
            self.refuse("tls-handshake", handshake_words(error))

    def refuse(self, stage: str, detail: str, identity: str | None = None) -> None:
        """Record a client refused for how it spoke (:class:`RefusedConnection`)."""
        self.refused.append(RefusedConnection(time.monotonic(), stage, detail, identity))

    def refused_since(self, since: float) -> list[RefusedConnection]:
        return [refusal for refusal in self.refused if refusal.at >= since]

    async def stop(self) -> None:
        """Stop listening, send GOAWAY on every connection, cancel handlers, close sockets."""
        if self._server is None:
            return
        self._server.close()
        connections = list(self._connections)
        for connection in connections:
            connection.shutdown()
        if connections:
            closing = [asyncio.ensure_future(c.closed()) for c in connections]
            await asyncio.wait(closing, timeout=self.config.shutdown_grace)
            for connection in connections:
                connection.abort()  # a no-op on connections already closed
            await asyncio.gather(*closing)
        await self._server.wait_closed()
        self._server = None

    @property
    def port(self) -> int:
        return listening_port(self._server)

    @property
    def base_uri(self) -> str:
        host = self.config.host
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self.port}/"

    # -- what connections share -------------------------------------------------------------

    def attach(self, connection: ServerConnection) -> None:
        self._connections.add(connection)
        self.stats.connections += 1

    def admit(self, identity: str | None) -> bool:
        """Count a connection of ``identity``; ``False`` if it already holds its share (then it is not counted)."""
        if not self.config.require_client_cert:
            return True
        held = self._per_identity.get(identity, 0)
        if held >= self.limits.max_connections_per_identity:
            return False
        self._per_identity[identity] = held + 1
        return True

    def leave(self, identity: str | None) -> None:
        held = self._per_identity.get(identity, 0) - 1
        if held > 0:
            self._per_identity[identity] = held
        else:
            self._per_identity.pop(identity, None)

    def detach(self, connection: ServerConnection) -> None:
        self._connections.discard(connection)
        self._starved.discard(connection)

    def charge(self, amount: int) -> None:
        self.buffered += amount
        self.stats.buffered_peak = max(self.stats.buffered_peak, self.buffered)

    def release(self, amount: int) -> None:
        """Bytes left the server-wide budget: connections held back by it may be acknowledged again."""
        self.buffered -= amount
        if self._starved and self.buffered <= self.limits.server_buffer_budget:
            starved, self._starved = self._starved, set()
            for connection in starved:
                connection.acknowledge_held()

    def starve(self, connection: ServerConnection) -> None:
        self._starved.add(connection)


# --------------------------------------------------------------------------- in a thread


@dataclass
class RunningServer:
    """A server running on its own event loop in a background thread."""

    server: H2Server
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread = field(repr=False)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def base_uri(self) -> str:
        return self.server.base_uri

    @property
    def stats(self) -> ServerStats:
        return self.server.stats


class _ThreadedServer(contextlib.AbstractContextManager["RunningServer"]):
    def __init__(self, handler: Handler, config: ServerConfig, timeout: float) -> None:
        self._handler, self._config, self._timeout = handler, config, timeout
        self._running: RunningServer | None = None

    def __enter__(self) -> RunningServer:
        loop = event_loops.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="sdcp-h2-server", daemon=True)
        thread.start()
        try:
            server = asyncio.run_coroutine_threadsafe(self._start(), loop).result(self._timeout)
        except BaseException:
            _stop_loop(loop, thread, self._timeout)
            raise
        self._running = RunningServer(server, loop, thread)
        return self._running

    async def _start(self) -> H2Server:
        server = H2Server(self._handler, self._config)
        await server.start()
        return server

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        try:
            stop = asyncio.run_coroutine_threadsafe(running.server.stop(), running.loop)
            stop.result(self._timeout)
        finally:
            _stop_loop(running.loop, running.thread, self._timeout)


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread, timeout: float) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout)
    if not thread.is_alive():
        loop.close()


def run_server_in_thread(
    handler: Handler, config: ServerConfig, *, timeout: float = 10.0
) -> contextlib.AbstractContextManager[RunningServer]:
    """Serve in a background thread: ``with run_server_in_thread(h, cfg) as running: ...``."""
    return _ThreadedServer(handler, config, timeout)


__all__ = [
    "DEFAULT_LIMITS",
    "H2Server",
    "RefusedConnection",
    "RunningServer",
    "ServerConfig",
    "ServerLimits",
    "ServerStats",
    "default_limits",
    "handshake_words",
    "listening_port",
    "run_server_in_thread",
]
