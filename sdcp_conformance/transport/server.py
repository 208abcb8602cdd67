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
  (P1-TLS-1), a body over the limit is answered 413 and the stream reset
  while at most one flow-control window of it was ever accepted, and the
  faults the harness plays (RST_STREAM, GOAWAY, abrupt close) are one call each.

The handler interface is :mod:`sdcp_conformance.transport.types`; a handler
raising :class:`~sdcp_conformance.errors.ProtocolError` gets its problem
document (P1-ERR-1), any other exception a 500 problem, and the server lives on.

D-SRV-4: the server checks transport, not media types: requests carry
``application/sdcp+cbor`` by §5.1, but the cache role serves raw bytes, so
each handler checks the content type it expects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes

from sdcp_conformance.errors import InvalidArgument, ProtocolError
from sdcp_conformance.protocol.codec import MAX_MESSAGE_SIZE
from sdcp_conformance.transport.problem import problem_response, status_problem_response
from sdcp_conformance.transport.tls import ALPN_H2, peer_uri_san, server_ssl_context
from sdcp_conformance.transport.types import Handler, Request, Response, TransportFault

log = logging.getLogger(__name__)

H2_PREFACE = b"PRI * HTTP/2.0"


# D-SRV-1: a TLS connection that did not negotiate ALPN "h2" is not HTTP/2 in
# the sense of RFC 9113 §3.2, even if it then sends the HTTP/2 preface. If its
# first bytes look like an HTTP/1.x request it gets this 505 (P1-TLS-1: "refused
# with 505 or the connection is closed"); anything else is closed silently.
def _http1_refusal() -> bytes:
    problem = status_problem_response(505, "SDCP requires HTTP/2 over TLS 1.3 (P1-TLS-1)")
    head = (
        "HTTP/1.1 505 HTTP Version Not Supported\r\n"
        "content-type: application/problem+json\r\n"
        "connection: close\r\n"
        f"content-length: {len(problem.body)}\r\n\r\n"
    )
    return head.encode("ascii") + problem.body


HTTP1_REFUSAL = _http1_refusal()


@dataclass(frozen=True)
class ServerConfig:
    """Where and how to serve; certificate paths come from :mod:`.pki`."""

    cert: Path
    key: Path
    ca: Path
    host: str = "127.0.0.1"
    port: int = 0
    require_client_cert: bool = True
    max_body: int = MAX_MESSAGE_SIZE
    """P1-MSG-2: "Bodies over 16 MiB may be refused with 413"."""
    max_concurrent_streams: int = 1024
    drain_limit: int = 256 << 20
    """After a 413, at most this many more upload bytes are read and discarded (D-SRV-3)."""
    initial_window: int = 1 << 20
    """Per-stream receive window; also the most of an oversized body ever accepted."""
    connection_window: int = 16 << 20
    handshake_timeout: float = 10.0
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
    largest_body_buffered: int = 0
    handler_errors: int = 0


class H2Server:
    """Serves one :data:`Handler` over HTTP/2 + TLS 1.3 (+ mTLS by default) on asyncio."""

    def __init__(self, handler: Handler, config: ServerConfig) -> None:
        self.handler = handler
        self.config = config
        self.stats = ServerStats()
        self._ssl = config.ssl_context()
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self),
            self.config.host,
            self.config.port,
            ssl=self._ssl,
            ssl_handshake_timeout=self.config.handshake_timeout,
            ssl_shutdown_timeout=self.config.shutdown_grace,
        )

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
        if self._server is None:
            raise InvalidArgument("the server is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_uri(self) -> str:
        host = self.config.host
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self.port}/"


class _Connection(asyncio.Protocol):
    """One TLS connection: h2 state, request streams and handler tasks."""

    def __init__(self, server: H2Server) -> None:
        self._server = server
        self._config = server.config
        self._transport: asyncio.Transport | None = None
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
        self._identity: str | None = None
        self._http1 = False
        self._bodies: dict[int, bytearray] = {}
        self._draining: dict[int, int] = {}
        self._headers: dict[int, list[tuple[bytes, bytes]]] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._window_waiters: dict[int, asyncio.Future[None]] = {}
        self._writable = asyncio.Event()
        self._writable.set()
        self._closed = asyncio.get_running_loop().create_future()
        self._flush_pending = False

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._server._connections.add(self)
        self._server.stats.connections += 1
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != ALPN_H2:
            self._http1 = True
            return
        self._identity = peer_uri_san(transport.get_extra_info("peercert"))
        codes = h2.settings.SettingCodes
        self._h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                codes.MAX_CONCURRENT_STREAMS: self._config.max_concurrent_streams,
                codes.INITIAL_WINDOW_SIZE: self._config.initial_window,
            },
        )
        self._h2.initiate_connection()
        self._h2.increment_flow_control_window(self._config.connection_window - 65535)
        self._flush()

    def data_received(self, data: bytes) -> None:
        if self._http1:
            self._refuse_http1(data)
            return
        try:
            events = self._h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self._flush()  # h2 queued a GOAWAY naming the error
            self._close()
            return
        for event in events:
            self._dispatch(event)
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._server._connections.discard(self)
        for task in self._tasks.values():
            task.cancel()
        for waiter in self._window_waiters.values():
            if not waiter.done():
                waiter.cancel()
        self._writable.set()
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- lifecycle ----------------------------------------------------------------------

    def shutdown(self) -> None:
        """Graceful stop: GOAWAY, cancel handlers, close the socket."""
        if self._transport is None or self._transport.is_closing():
            return
        if not self._http1:
            self._h2.close_connection()
            self._flush()
        for task in self._tasks.values():
            task.cancel()
        self._close()

    def abort(self) -> None:
        if self._transport is not None and not self._closed.done():
            self._transport.abort()

    async def closed(self) -> None:
        await asyncio.shield(self._closed)

    def _close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def _refuse_http1(self, data: bytes) -> None:
        assert self._transport is not None
        self._server.stats.http1_refused += 1
        if not data.startswith(H2_PREFACE[: len(data)]):
            self._transport.write(HTTP1_REFUSAL)
        self._http1 = True
        self._close()

    # -- h2 events ----------------------------------------------------------------------

    def _dispatch(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._on_request(event)
        elif isinstance(event, h2.events.DataReceived):
            self._on_data(event)
        elif isinstance(event, h2.events.StreamEnded):
            self._on_stream_ended(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self._forget(event.stream_id, cancel=True)
            self._wake(event.stream_id)
        elif isinstance(event, h2.events.WindowUpdated):
            self._wake(event.stream_id)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._close()

    def _on_request(self, event: h2.events.RequestReceived) -> None:
        stream_id = event.stream_id
        headers = list(event.headers or ())
        declared = _content_length(headers)
        if declared is not None and declared > self._config.max_body:
            self._refuse_body(stream_id, f"declared body of {declared} bytes")
            return
        self._headers[stream_id] = headers
        self._bodies[stream_id] = bytearray()
        if event.stream_ended is not None:
            self._on_stream_ended(stream_id)

    def _on_data(self, event: h2.events.DataReceived) -> None:
        stream_id = event.stream_id
        body = self._bodies.get(stream_id)
        if body is None:
            self._drain(stream_id, event.flow_controlled_length)
            return
        body += event.data or b""
        if len(body) > self._config.max_body:
            self._refuse_body(stream_id, f"body exceeds {self._config.max_body} bytes")
            return
        stats = self._server.stats
        stats.largest_body_buffered = max(stats.largest_body_buffered, len(body))
        self._h2.acknowledge_received_data(event.flow_controlled_length, stream_id)

    def _on_stream_ended(self, stream_id: int) -> None:
        self._draining.pop(stream_id, None)
        headers = self._headers.pop(stream_id, None)
        body = self._bodies.pop(stream_id, None)
        if headers is None or body is None:
            return
        request = _make_request(headers, bytes(body), self._identity)
        self._server.stats.requests += 1
        self._tasks[stream_id] = asyncio.ensure_future(self._respond(stream_id, request))

    def _refuse_body(self, stream_id: int, why: str) -> None:
        """Answer 413 at once, drop what was buffered, and discard the rest of the upload."""
        self._server.stats.bodies_refused += 1
        self._forget(stream_id, cancel=False)
        self._draining[stream_id] = 0
        response = status_problem_response(413, f"{why}; the limit is {self._config.max_body}")
        try:
            self._send_headers(stream_id, response, end_stream=False)
            self._h2.send_data(stream_id, response.body, end_stream=True)
        except h2.exceptions.FlowControlError:
            self._reset(stream_id, ErrorCodes.REFUSED_STREAM)

    def _drain(self, stream_id: int, length: int) -> None:
        """Discard DATA of a refused (or unknown) stream, keeping the windows open.

        D-SRV-3: RFC 9113 §8.1 lets a server reset a stream with NO_ERROR after a
        complete early response, but httpx/httpcore 1.0 then waits for flow-control
        credit until its read timeout and never sees the 413. So the upload is
        read and thrown away (memory stays bounded) up to ``drain_limit`` bytes,
        and only a longer one is reset (CANCEL).
        """
        self._h2.acknowledge_received_data(length, stream_id)
        if stream_id not in self._draining:
            return
        self._draining[stream_id] += length
        if self._draining[stream_id] > self._config.drain_limit:
            self._draining.pop(stream_id)
            self._reset(stream_id, ErrorCodes.CANCEL)

    def _forget(self, stream_id: int, *, cancel: bool) -> None:
        self._draining.pop(stream_id, None)
        self._headers.pop(stream_id, None)
        self._bodies.pop(stream_id, None)
        task = self._tasks.pop(stream_id, None)
        if cancel and task is not None:
            task.cancel()

    # -- responding ---------------------------------------------------------------------

    async def _respond(self, stream_id: int, request: Request) -> None:
        try:
            response = await self._call_handler(request)
            if response.fault is not None:
                self._commit_fault(stream_id, response.fault)
                return
            await self._send_response(stream_id, response)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            pass  # the peer reset the stream or the connection is going away
        except Exception:  # never let one response kill the connection
            log.exception("sending the response on stream %d failed", stream_id)
            self._reset(stream_id, ErrorCodes.INTERNAL_ERROR)
        finally:
            self._tasks.pop(stream_id, None)

    async def _call_handler(self, request: Request) -> Response:
        try:
            return await self._server.handler(request)
        except ProtocolError as error:
            return problem_response(error)
        except Exception as exc:
            self._server.stats.handler_errors += 1
            log.exception("handler failed on %s %s", request.method, request.path)
            return status_problem_response(500, f"handler raised {type(exc).__name__}")

    def _commit_fault(self, stream_id: int, fault: TransportFault) -> None:
        assert self._transport is not None
        if fault is TransportFault.RESET_STREAM:
            self._reset(stream_id, ErrorCodes.INTERNAL_ERROR)
        elif fault is TransportFault.GOAWAY:
            # D-SRV-2: last_stream_id is the highest stream h2 received, this one
            # included: the request was seen but never answered.
            self._h2.close_connection(ErrorCodes.NO_ERROR)
            self._flush()
            self._close()
        else:
            self._transport.abort()

    async def _send_response(self, stream_id: int, response: Response) -> None:
        body = response.body
        self._send_headers(stream_id, response, end_stream=not body)
        view = memoryview(body)
        while view:
            window = min(self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size)
            if window <= 0 or not self._writable.is_set():
                await self._wait_to_send(stream_id)
                continue
            chunk, view = view[:window], view[window:]
            self._h2.send_data(stream_id, bytes(chunk), end_stream=not view)
            self._flush_soon()
        self._flush_soon()

    def _send_headers(self, stream_id: int, response: Response, *, end_stream: bool) -> None:
        headers = [(":status", str(response.status)), ("content-length", str(len(response.body)))]
        headers += [(name.lower(), value) for name, value in response.headers if name.lower() != "content-length"]
        self._h2.send_headers(stream_id, headers, end_stream=end_stream)

    async def _wait_to_send(self, stream_id: int) -> None:
        if not self._writable.is_set():
            await self._writable.wait()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._window_waiters[stream_id] = waiter
        try:
            await waiter
        finally:
            self._window_waiters.pop(stream_id, None)

    def _wake(self, stream_id: int) -> None:
        """A window opened (stream 0: the whole connection): let waiting senders retry."""
        targets = (
            self._window_waiters.values()
            if stream_id == 0
            else ([self._window_waiters[stream_id]] if stream_id in self._window_waiters else [])
        )
        for waiter in list(targets):
            if not waiter.done():
                waiter.set_result(None)

    def _reset(self, stream_id: int, code: ErrorCodes) -> None:
        with contextlib.suppress(h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            self._h2.reset_stream(stream_id, code)
        self._flush_soon()

    # -- writing ------------------------------------------------------------------------

    def _flush_soon(self) -> None:
        """Coalesce the frames of every stream answered in this loop iteration into one write."""
        if not self._flush_pending:
            self._flush_pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        data = self._h2.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            with contextlib.suppress(ValueError):
                return int(value)
    return None


def _make_request(raw_headers: list[tuple[bytes, bytes]], body: bytes, identity: str | None) -> Request:
    pseudo: dict[str, str] = {}
    headers: list[tuple[str, str]] = []
    for raw_name, raw_value in raw_headers:
        name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
        if name.startswith(":"):
            pseudo[name] = value
        else:
            headers.append((name, value))
    target = pseudo.get(":path", "/")
    path, _, query = target.partition("?")
    return Request(
        method=pseudo.get(":method", ""),
        path=unquote(path),
        query=query,
        headers=tuple(headers),
        body=body,
        peer_identity=identity,
    )


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
        loop = asyncio.new_event_loop()
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
    "H2Server",
    "RunningServer",
    "ServerConfig",
    "ServerStats",
    "run_server_in_thread",
]
