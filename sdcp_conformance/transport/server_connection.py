"""One connection of :class:`~.server.H2Server`: h2 state, request streams, handler tasks and the limits.

Each connection enforces :class:`~.limits.ServerLimits` on its own client, so
whatever one client does costs only its own connection (and, bounded, the
server-wide budget): a watchdog ticking every :attr:`~.limits.ServerLimits.tick_s`
checks the preface, header, body, idle and drain deadlines; a frame observer
(:mod:`.h2state`) spends token buckets before h2 acts on a frame; request
bodies are charged to the connection's and the server's budget and their
flow-control credit is withheld while a budget is spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import unquote

import h2.config
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes

from sdcp_conformance.transport.frames import FrameWriter
from sdcp_conformance.transport.h2state import GoawayAwareConnection
from sdcp_conformance.transport.limits import TokenBucket
from sdcp_conformance.transport.problem import call_handler, status_problem_response
from sdcp_conformance.transport.tls import ALPN_H2, peer_uri_san
from sdcp_conformance.transport.types import Request, Response, TransportFault

if TYPE_CHECKING:
    from sdcp_conformance.transport.server import H2Server

log = logging.getLogger(__name__)

H2_PREFACE = b"PRI * HTTP/2.0"
DATA, RST_STREAM, SETTINGS, PING = 0x0, 0x3, 0x4, 0x6
WATCHED_DELIVERIES = 256
"""Answered streams per connection whose late RST_STREAM is still reported (``Response.undelivered``)."""
END_STREAM = ACK = 0x1


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


class _Calm(h2.exceptions.ProtocolError):
    """A client over a rate limit: h2 answers it with GOAWAY(ENHANCE_YOUR_CALM) (RFC 9113 §7)."""

    error_code = ErrorCodes.ENHANCE_YOUR_CALM

    def __init__(self, what: str) -> None:
        super().__init__(f"too many {what} frames")
        self.what = what


class _SendTimedOut(Exception):
    """The client kept a response's window closed past ``send_timeout_s``; the stream was reset."""


class _Inbound:
    """A request whose headers arrived and whose body is still arriving."""

    __slots__ = ("body", "charged", "headers", "started")

    def __init__(self, headers: list[tuple[bytes, bytes]], started: float) -> None:
        self.headers = headers
        self.body = bytearray()
        self.charged = 0
        self.started = started


class ServerConnection(asyncio.Protocol):
    """One TLS connection: h2 state, request streams, handler tasks, limits."""

    def __init__(self, server: H2Server) -> None:
        self._server = server
        self._limits = limits = server.limits
        self._loop = asyncio.get_running_loop()
        now = self._loop.time()
        self._h2 = GoawayAwareConnection(h2.config.H2Configuration(client_side=False, header_encoding=None),
                                         observer=self._on_frame)
        self._buckets = {
            RST_STREAM: ("RST_STREAM", TokenBucket(limits.resets, now)),
            SETTINGS: ("SETTINGS", TokenBucket(limits.settings, now)),
            PING: ("PING", TokenBucket(limits.pings, now)),
            DATA: ("empty DATA", TokenBucket(limits.empty_data, now)),
        }
        self._stream_errors = TokenBucket(limits.stream_errors, now)
        self._transport: asyncio.Transport | None = None
        self._identity: str | None = None
        self._admitted = False
        """Counted against ``max_connections_per_identity`` (released when the connection ends)."""
        self._http1 = False
        self._inbound: dict[int, _Inbound] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._task_charges: dict[int, int] = {}
        self._delivered: dict[int, Callable[[], None]] = {}
        """Streams answered with a response that asked to hear of its loss, oldest first (WATCHED_DELIVERIES)."""
        self._held: dict[int, int] = {}
        """Flow-controlled bytes received and not acknowledged (a budget was spent), by stream."""
        self.buffered = 0
        self._requests = 0
        self._goaway_last: int | None = None
        self._goaway_at = 0.0
        self._preface_done = False
        self._started = now
        self._idle_since: float | None = now
        self._header_since: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._window_waiters: dict[int, asyncio.Future[None]] = {}
        self._writable = asyncio.Event()
        self._writable.set()
        self._closed = self._loop.create_future()
        self._writer = FrameWriter(self._h2, self._loop, lambda: self._transport)

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._server.attach(self)
        self._timer = self._loop.call_later(self._limits.tick_s, self._tick)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != ALPN_H2:
            self._http1 = True
            return
        self._identity = peer_uri_san(transport.get_extra_info("peercert"))
        self._admitted = self._server.admit(self._identity)
        limits, codes = self._limits, h2.settings.SettingCodes
        self._h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                codes.MAX_CONCURRENT_STREAMS: limits.max_concurrent_streams,
                codes.INITIAL_WINDOW_SIZE: limits.initial_window,
                codes.MAX_FRAME_SIZE: limits.max_frame_size,
                codes.MAX_HEADER_LIST_SIZE: limits.max_header_list_size,
            },
        )
        # The settings take effect at once (h2 applies initial values immediately), so apply their limits too.
        self._h2.max_inbound_frame_size = limits.max_frame_size
        self._h2.decoder.max_header_list_size = limits.max_header_list_size
        self._h2.initiate_connection()
        self._h2.increment_flow_control_window(limits.connection_window - 65535)
        self._writer.flush()
        if not self._admitted:
            self._count_calm("connections per identity")
            self._goaway_and_close(ErrorCodes.ENHANCE_YOUR_CALM, f"more than {limits.max_connections_per_identity} "
                                   "connections for this client identity")

    def data_received(self, data: bytes) -> None:
        if self._http1:
            self._refuse_http1(data)
            return
        try:
            events = self._h2.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            # h2 queued a GOAWAY naming the error (ENHANCE_YOUR_CALM for _Calm, FRAME_SIZE_ERROR for a frame
            # declared too large, already at its header).
            stats = self._server.stats
            if isinstance(exc, _Calm):
                self._count_calm(exc.what)
            else:
                if isinstance(exc, h2.exceptions.FrameTooLargeError):
                    stats.frame_size_refused += 1
                self._server.refuse("h2-protocol", f"{type(exc).__name__}: {exc}", self._identity)
            self._writer.flush()
            self._close()
            return
        for event in events:
            if self._is_closing():
                break
            self._dispatch(event)
        self._writer.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.detach(self)
        if self._admitted:
            self._server.leave(self._identity)
            self._admitted = False
        if self._timer is not None:
            self._timer.cancel()
        for task in self._tasks.values():
            task.cancel()
        for stream_id in list(self._inbound):
            self._forget(stream_id, cancel=False)
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

    def _is_closing(self) -> bool:
        return self._transport is None or self._transport.is_closing()

    def shutdown(self) -> None:
        """Graceful stop: GOAWAY, cancel handlers, close the socket."""
        if self._is_closing():
            return
        if not self._http1:
            self._h2.close_connection()
            self._writer.flush()
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

    def _goaway_and_close(self, code: ErrorCodes, why: str) -> None:
        if not self._http1:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self._h2.close_connection(code, additional_data=why.encode())
            self._writer.flush()
        for task in self._tasks.values():
            task.cancel()
        self._close()

    def _count_calm(self, what: str) -> None:
        stats = self._server.stats
        stats.enhance_your_calm += 1
        stats.calm_reasons[what] = stats.calm_reasons.get(what, 0) + 1

    def _refuse_http1(self, data: bytes) -> None:
        assert self._transport is not None
        self._server.stats.http1_refused += 1
        if not data.startswith(H2_PREFACE[: len(data)]):
            line = bytes(data[:80]).split(b"\r\n", 1)[0].decode("latin-1", "replace")
            self._server.refuse("http/1.1", f"the client spoke HTTP/1.1 ({line!r}; §5.1 requires HTTP/2)")
            self._transport.write(HTTP1_REFUSAL)
        else:
            self._server.refuse("alpn", "the client sent the HTTP/2 preface without negotiating ALPN h2 "
                                "(P1-TLS-1)")
        self._http1 = True
        self._close()

    # -- limits -------------------------------------------------------------------------

    def _on_frame(self, frame_type: int, flags: int, stream_id: int, length: int) -> None:
        """Before h2 acts on a frame: spend the token its kind costs, or end the connection (ENHANCE_YOUR_CALM)."""
        if frame_type == DATA and (length or flags & END_STREAM):
            return  # a DATA frame that carries bytes or ends the stream is progress
        if frame_type == RST_STREAM and stream_id in self._delivered:
            self._lost(self._delivered.pop(stream_id))  # after its answer was sent: the reset crossed it
        if frame_type in (SETTINGS, PING) and flags & ACK:
            return
        entry = self._buckets.get(frame_type)
        if entry is not None and not entry[1].take(self._loop.time()):
            raise _Calm(entry[0])

    def _stream_error(self, what: str) -> None:
        """The server had to reset one of the client's streams; too many of those end the connection.

        D-SRV-6: what counts is what the client caused — stream-level errors h2 detects (it resets the stream
        itself: made-you-reset) and bodies refused as too large (413) or too slow (408); never a reset a
        handler asked for (the harness playing a faulty cache) nor one after a handler error."""
        if not self._stream_errors.take(self._loop.time()) and not self._is_closing():
            self._count_calm("stream error")
            self._goaway_and_close(ErrorCodes.ENHANCE_YOUR_CALM, f"too many stream errors ({what})")

    def _tick(self) -> None:
        """The watchdog: preface, header, body, idle and drain deadlines."""
        self._timer = None
        if self._is_closing():
            return
        now, limits = self._loop.time(), self._limits
        if not self._http1 and not self._preface_done:
            if now - self._started > limits.preface_timeout_s:
                self._time_out("preface", "no client preface and SETTINGS")
                return
        elif self._h2.incoming_buffer.header_block_open:
            self._header_since = self._header_since or now
            if now - self._header_since > limits.header_timeout_s:
                self._time_out("header", "header block not complete")
                return
        else:
            self._header_since = None
        for stream_id, inbound in list(self._inbound.items()):
            if now - inbound.started > limits.body_timeout_s and not self._is_closing():
                # D-SRV-8: the body deadline runs from the headers, not between reads (a byte a second would
                # keep a gap timer alive forever); the stream, not the connection, is cut: 408, RST_STREAM.
                self._server.stats.bodies_timed_out += 1
                self._refuse(stream_id, 408, f"the request body was not complete within {limits.body_timeout_s:g} s")
        if self._is_closing():
            return
        if self._inbound or self._tasks or self._header_since is not None:
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now
        elif now - self._idle_since > limits.idle_timeout_s:
            self._time_out("idle", "idle")
            return
        if self._goaway_last is not None and now - self._goaway_at > limits.drain_timeout_s:
            self._time_out("drain", "streams owed after GOAWAY not done")
            return
        self._writer.flush()
        self._timer = self._loop.call_later(limits.tick_s, self._tick)

    def _time_out(self, which: str, why: str) -> None:
        timed_out = self._server.stats.timed_out
        timed_out[which] = timed_out.get(which, 0) + 1
        self._goaway_and_close(ErrorCodes.NO_ERROR, f"{why} within the server's {which} timeout")

    def _within_budget(self) -> bool:
        limits = self._limits
        return (self.buffered <= limits.connection_buffer_budget
                and self._server.buffered <= limits.server_buffer_budget)

    def _charge(self, inbound: _Inbound, amount: int) -> None:
        inbound.charged += amount
        self.buffered += amount
        self._server.charge(amount)

    def _release(self, amount: int) -> None:
        if amount:
            self.buffered -= amount
            self._server.release(amount)
            self.acknowledge_held()

    def acknowledge_held(self) -> None:
        """Give back the flow-control credit withheld while a budget was spent, if it is no longer."""
        if not self._held or self._is_closing():
            return
        if not self._within_budget():
            self._server.starve(self)
            return
        held, self._held = self._held, {}
        for stream_id, amount in held.items():
            self._h2.acknowledge_received_data(amount, stream_id)
        self._writer.flush_soon()

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
            if not event.remote_reset:  # h2 reset it: the client broke HTTP/2 on this stream
                self._stream_error(f"h2 reset stream {event.stream_id}")
        elif isinstance(event, h2.events.WindowUpdated):
            self._wake(event.stream_id)
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            self._preface_done = True
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._close()

    def _on_request(self, event: h2.events.RequestReceived) -> None:
        stream_id, limits = event.stream_id, self._limits
        if self._goaway_last is not None and stream_id > self._goaway_last:
            # Above our GOAWAY's last_stream_id: never processed, so the client may resend it (RFC 9113 §8.7).
            self._server.stats.streams_refused += 1
            self._reset(stream_id, ErrorCodes.REFUSED_STREAM)
            return
        headers = list(event.headers or ())
        declared = content_length(headers)
        if declared is not None and declared > limits.max_body:
            self._refuse(stream_id, 413, f"declared body of {declared} bytes; the limit is {limits.max_body}")
            return
        if declared and self._server.buffered + declared > limits.server_buffer_budget:
            self._refuse(stream_id, 503, "the server's request buffers are full", stream_error=False)
            return
        self._inbound[stream_id] = _Inbound(headers, self._loop.time())
        self._idle_since = None
        if event.stream_ended is not None:
            self._on_stream_ended(stream_id)

    def _on_data(self, event: h2.events.DataReceived) -> None:
        stream_id, length = event.stream_id, event.flow_controlled_length or 0
        inbound = self._inbound.get(stream_id)
        if inbound is None:
            self._h2.acknowledge_received_data(length, stream_id)
            return
        data = event.data or b""
        max_body = self._limits.max_body
        if len(inbound.body) + len(data) > max_body:
            self._h2.acknowledge_received_data(length, stream_id)
            self._refuse(stream_id, 413, f"body exceeds {max_body} bytes; the limit is {max_body}")
            return
        inbound.body += data
        self._charge(inbound, len(data))
        stats = self._server.stats
        stats.largest_body_buffered = max(stats.largest_body_buffered, len(inbound.body))
        if self._within_budget():
            self._h2.acknowledge_received_data(length, stream_id)
        else:
            self._held[stream_id] = self._held.get(stream_id, 0) + length
            self._server.starve(self)

    def _on_stream_ended(self, stream_id: int) -> None:
        inbound = self._inbound.pop(stream_id, None)
        if inbound is None:
            return
        request = make_request(inbound.headers, bytes(inbound.body), self._identity)
        inbound.body = bytearray()
        self._server.stats.requests += 1
        self._requests += 1
        self._task_charges[stream_id] = inbound.charged
        self._tasks[stream_id] = asyncio.ensure_future(self._respond(stream_id, request))
        max_requests = self._limits.max_requests
        if max_requests is not None and self._requests >= max_requests and self._goaway_last is None:
            self._graceful_goaway()

    def _graceful_goaway(self) -> None:
        """GOAWAY(NO_ERROR) naming the highest stream seen: those are answered, later ones refused.

        D-SRV-5: ``last_stream_id`` is the highest stream received when the N-th request completes (nginx's and
        hypercorn's choice), so nothing already sent is turned away; later streams get REFUSED_STREAM (§8.7)."""
        last = self._h2.highest_inbound_stream_id
        self._goaway_last, self._goaway_at = last, self._loop.time()
        self._h2.close_connection(ErrorCodes.NO_ERROR, last_stream_id=last)
        self._server.stats.graceful_goaways += 1
        self._writer.flush_soon()

    def _maybe_done(self) -> None:
        """After a graceful GOAWAY, close once every stream it promised to answer is done."""
        if self._goaway_last is not None and not self._inbound and not self._tasks and not self._is_closing():
            self._writer.flush()
            self._close()

    def _refuse(self, stream_id: int, status: int, why: str, *, stream_error: bool = True) -> None:
        """Answer at once and reset the stream (RFC 9113 §8.1: NO_ERROR, "abort transmission of a request
        without error"), without reading the rest of the body; replaces D-SRV-3's drain."""
        if status != 408:
            self._server.stats.bodies_refused += 1
        self._forget(stream_id, cancel=False)
        response = status_problem_response(status, why)
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self._send_headers(stream_id, response, end_stream=False)
            self._h2.send_data(stream_id, response.body, end_stream=True)
        self._reset(stream_id, ErrorCodes.NO_ERROR)
        if stream_error:
            self._stream_error(f"{status} on stream {stream_id}")
        self._maybe_done()

    def _forget(self, stream_id: int, *, cancel: bool) -> None:
        inbound = self._inbound.pop(stream_id, None)
        if inbound is not None:
            self._release(inbound.charged)
        task = self._tasks.get(stream_id)
        if cancel and task is not None:
            task.cancel()

    # -- responding ---------------------------------------------------------------------

    async def _respond(self, stream_id: int, request: Request) -> None:
        response: Response | None = None
        try:
            response = await call_handler(self._server.handler, request, self._server.stats.count_handler_error)
            if response.fault is not None:
                self._commit_fault(stream_id, response.fault)
                return
            await self._send_response(stream_id, response)
            if response.undelivered is not None:
                self._delivered[stream_id] = response.undelivered
                if len(self._delivered) > WATCHED_DELIVERIES:
                    del self._delivered[next(iter(self._delivered))]
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, _SendTimedOut):
            # the peer reset the stream, the connection is going away, or the client stopped reading
            if response is not None and response.undelivered is not None:
                self._lost(response.undelivered)
        except Exception:  # never let one response kill the connection
            log.exception("sending the response on stream %d failed", stream_id)
            self._reset(stream_id, ErrorCodes.INTERNAL_ERROR)
        finally:
            self._tasks.pop(stream_id, None)
            self._release(self._task_charges.pop(stream_id, 0))
            self._maybe_done()

    @staticmethod
    def _lost(undelivered: Callable[[], None]) -> None:
        try:
            undelivered()
        except Exception:  # the handler's bookkeeping must not end the connection
            log.exception("a response's undelivered callback failed")

    def _commit_fault(self, stream_id: int, fault: TransportFault) -> None:
        assert self._transport is not None
        if fault is TransportFault.RESET_STREAM:
            self._reset(stream_id, ErrorCodes.INTERNAL_ERROR)
        elif fault is TransportFault.GOAWAY:
            # D-SRV-2: last_stream_id is the highest stream h2 received, this one
            # included: the request was seen but never answered.
            self._h2.close_connection(ErrorCodes.NO_ERROR)
            self._writer.flush()
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
            self._writer.flush_soon()
        self._writer.flush_soon()

    def _send_headers(self, stream_id: int, response: Response, *, end_stream: bool) -> None:
        headers = [(":status", str(response.status)), ("content-length", str(len(response.body)))]
        headers += [(name.lower(), value) for name, value in response.headers if name.lower() != "content-length"]
        self._h2.send_headers(stream_id, headers, end_stream=end_stream)

    async def _wait_to_send(self, stream_id: int) -> None:
        """Wait for the client's window (or the socket) to open, at most ``send_timeout_s``."""
        try:
            async with asyncio.timeout(self._limits.send_timeout_s):
                if not self._writable.is_set():
                    await self._writable.wait()
                    return
                waiter = self._loop.create_future()
                self._window_waiters[stream_id] = waiter
                try:
                    await waiter
                finally:
                    self._window_waiters.pop(stream_id, None)
        except TimeoutError:
            self._server.stats.sends_timed_out += 1
            self._reset(stream_id, ErrorCodes.CANCEL)
            raise _SendTimedOut from None

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
        self._writer.flush_soon()


def content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The request's declared body length (None: not declared, or not a number)."""
    for name, value in headers:
        if name == b"content-length":
            with contextlib.suppress(ValueError):
                return int(value)
    return None


def make_request(raw_headers: list[tuple[bytes, bytes]], body: bytes, identity: str | None) -> Request:
    """The handler's view of a request from its h2 header list (pseudo-headers split off, path decoded)."""
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


__all__ = ["HTTP1_REFUSAL", "ServerConnection", "content_length", "make_request"]
