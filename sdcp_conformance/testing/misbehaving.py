"""A deliberately misbehaving SDCP server: one :class:`Mode` per way a new implementation breaks.

The harness must end every conversation with such a server in bounded time,
with a FAILED verdict that names the stage where it broke (issue 12) — never
a PASS, a crash or a hang. Modes that need correct SDCP answers around their
misbehaviour (a wrong label on a valid body, valid answers then a hang, a
graceful GOAWAY) take them from an inner :data:`~sdcp_conformance.transport.types.Handler`,
normally the reference verifier's app. The modes in :data:`CONFORMANT` do
only what HTTP/2 allows (a graceful GOAWAY before the answers still owed,
a 103 first, trailers, a header block in CONTINUATION frames, …): a harness
must judge their inner handler as if it were reached directly.

The server is built on h2 like the project's own (:mod:`.h2state` keeps h2
open through GOAWAY) but shares none of its limits: it misbehaves only as
told.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ssl
from dataclasses import dataclass
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    HeadersFrame,
    PriorityFrame,
    PushPromiseFrame,
    RstStreamFrame,
    SettingsFrame,
)

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.frames import receive_events, write_queued
from sdcp_conformance.transport.h2state import GoawayAwareConnection
from sdcp_conformance.transport.problem import status_problem_response
from sdcp_conformance.transport.server import listening_port
from sdcp_conformance.transport.server_connection import make_request
from sdcp_conformance.transport.tls import peer_uri_san, serve_tls
from sdcp_conformance.transport.types import Handler, Request, Response


class Mode(enum.Enum):
    """How the server misbehaves (issue 12's list, plus the conformant graceful GOAWAY)."""

    HANG = "hang"
    """TLS and HTTP/2 SETTINGS, then no answer to anything."""
    STALLED_HANDSHAKE = "stalled-handshake"
    """Accepts TCP and never speaks TLS."""
    DRIP_BODY = "drip-body"
    """Answers 200 with content-length 1000, then one body byte per ``drip_interval_s``."""
    STREAM_RESET = "stream-reset"
    """RST_STREAM(INTERNAL_ERROR) on every request."""
    REFUSED_STREAMS = "refused-streams"
    """RST_STREAM(REFUSED_STREAM) on every request: never processed, so a client may resend it (RFC 9113 §8.7),
    but nothing is ever served."""
    GOAWAY_ERROR = "goaway-error"
    """GOAWAY(INTERNAL_ERROR) naming the request's stream as processed, then closes."""
    GOAWAY_AT_ONCE = "goaway-at-once"
    """GOAWAY(NO_ERROR) naming no stream right after its SETTINGS, then closes: every connection refuses every
    request unprocessed (a server that is shutting down and never comes back)."""
    CLOSE_AFTER_HANDSHAKE = "close-after-handshake"
    """Completes TLS, then closes before any HTTP/2 frame."""
    GARBAGE_CBOR = "garbage-cbor"
    """200 ``application/sdcp+cbor`` whose bytes are not CBOR."""
    WRONG_SHAPE = "wrong-cbor-shape"
    """200 ``application/sdcp+cbor``: well-formed CBOR, not the message the resource returns."""
    WRONG_MEDIA_TYPE = "wrong-media-type"
    """The inner handler's valid answers, labelled ``application/json``."""
    STATUS_500_WITH_BODY = "500-with-body"
    STATUS_500_WITHOUT_BODY = "500-without-body"
    HUGE_BODY = "2gib-body"
    """200 declaring a 2 GiB body, then zeros as fast as flow control allows."""
    HUGE_BODY_UNDECLARED = "2gib-body-undeclared"
    """The same without a content-length: the reader finds out while streaming."""
    TLS12_ONLY = "tls12-only"
    NO_CLIENT_CERT_REQUEST = "no-client-cert-request"
    """Never asks for a client certificate (§5.1 requires mutual authentication); answers validly."""
    HTTP11_ONLY = "http11-only"
    """ALPN ``http/1.1`` only (no ``h2``); answers HTTP/1.1 requests."""
    LATE_HEADERS = "late-headers"
    """The inner handler's answers, each sent ``late_s`` after its request."""
    VALID_THEN_HANG = "valid-then-hang"
    """The first ``valid_requests`` requests answered by the inner handler, then no answer."""
    VALID_THEN_CLOSE = "valid-then-close"
    """The first ``valid_requests`` requests answered by the inner handler; then each request that arrives ends its
    connection, with no GOAWAY (RFC 9113 §6.8 asks for one, so that the client knows what was processed)."""
    CBOR_AS_HTML = "cbor-as-html"
    """The inner handler's valid answers, labelled ``text/html``."""
    TRUNCATED_BODY = "truncated-body"
    """Declares the inner answer's length, sends half the body, closes the connection."""
    OTHER_CA = "other-ca"
    """Presents a server certificate from a CA the harness does not trust."""
    GRACEFUL_GOAWAY = "graceful-goaway"
    """Conformant: GOAWAY(NO_ERROR) every ``goaway_every`` streams, then answers every stream it named."""
    LATE_END_STREAM = "late-end-stream"
    """Conformant: each answer's HEADERS and whole body (its declared content-length) at once, and the END_STREAM
    ``late_s`` later in an empty DATA frame — a loaded server flushing its last frame late."""
    KEEPALIVE_LIMIT = "keepalive-limit"
    """Conformant, as hypercorn 0.18 on its default settings ends a connection after ``keep_alive_max_requests``:
    when a request beyond ``goaway_every`` arrives, h2's own ``close_connection()`` (GOAWAY(NO_ERROR) naming the
    highest stream received), after which h2 refuses to send anything, so every stream still in flight — the one
    that crossed the limit among them — is abandoned, never answered; the next frame the client sends is answered
    with GOAWAY(PROTOCOL_ERROR), and the connection closed. RFC 9113 §6.8 allows it ("might still complete"); a
    client resends what was lost (P1-JUDGE-6)."""
    INFORMATIONAL_FIRST = "informational-first"
    """Conformant: a 103 (Early Hints) HEADERS frame before each answer (RFC 9113 §8.1, RFC 9110 §15.2)."""
    TRAILERS = "trailers"
    """Conformant: each answer ends with a trailer HEADERS frame instead of END_STREAM on its last DATA frame."""
    SMALL_PADDED_FRAMES = "small-padded-frames"
    """Conformant: each answer's body in DATA frames of 7 octets, each padded with 200 (RFC 9113 §6.1)."""
    ZERO_WINDOW = "zero-window"
    """SETTINGS_INITIAL_WINDOW_SIZE 0 and never a WINDOW_UPDATE: no request body can be sent."""
    NO_STREAMS = "no-streams"
    """SETTINGS_MAX_CONCURRENT_STREAMS 0: no request may be opened."""
    BAD_STATUS = "bad-status"
    """A final response whose :status is ``2xx``, not a three-digit code (a malformed response)."""
    SHUTDOWN_NOTICE = "shutdown-notice"
    """Conformant: RFC 9113 §6.8's two-step shutdown every ``goaway_every`` streams: GOAWAY(NO_ERROR) naming
    2^31-1 and a PING; on the PING's ACK a second GOAWAY(NO_ERROR) naming the last stream received, every stream
    it names answered, then the connection closed."""
    ONE_STREAM = "one-stream"
    """Conformant: SETTINGS_MAX_CONCURRENT_STREAMS 1, so concurrent requests wait their turn (RFC 9113 §5.1.2)."""
    FRAME_NOISE = "frame-noise"
    """Conformant: before each answer a PING, a PRIORITY frame, a frame of an unknown type and a SETTINGS frame with
    an unknown identifier, which a client answers or ignores (RFC 9113 §4.1, §5.5, §6.3, §6.5.2, §6.7)."""
    SMALL_WINDOW = "small-window"
    """Conformant: SETTINGS_INITIAL_WINDOW_SIZE 16, so a request body goes 16 octets per WINDOW_UPDATE."""
    PUSH_PROMISE = "push-promise"
    """Before each answer a PUSH_PROMISE and the pushed response, although the client's SETTINGS_ENABLE_PUSH is 0
    (RFC 9113 §8.4: a connection error)."""
    CLOSE_WHEN_IDLE = "close-when-idle"
    """Conformant: once no stream is open, GOAWAY(NO_ERROR) naming the last stream received, then the connection
    closes: each connection serves one burst of requests."""
    RESET_AFTER_ANSWER = "reset-after-answer"
    """Conformant: each complete answer is followed by RST_STREAM(NO_ERROR), which RFC 9113 §8.1 says a client
    MUST NOT discard the response for."""
    EARLY_ANSWER = "early-answer"
    """SETTINGS_INITIAL_WINDOW_SIZE 16, and on each request's HEADERS, before its body arrives, a complete 413
    problem answer and RST_STREAM(NO_ERROR) (RFC 9113 §8.1): an answer the client must read as the answer, not
    as a reset."""
    LONG_HEADERS = "long-headers"
    """Conformant: each answer carries a header of 24,000 octets, so its header block spans HEADERS and
    CONTINUATION frames (RFC 9113 §6.10); the client advertised no SETTINGS_MAX_HEADER_LIST_SIZE."""
    CONTINUATION_FLOOD = "continuation-flood"
    """A HEADERS frame without END_HEADERS, then CONTINUATION frames that never end the header block."""
    ENDLESS_INFORMATIONAL = "endless-informational"
    """A 103 (Early Hints) every 20 ms and never a final response."""
    DATA_BEFORE_HEADERS = "data-before-headers"
    """A DATA frame ending the stream before any HEADERS (RFC 9113 §8.1: a malformed response)."""
    BODY_OVER_DECLARED = "body-over-declared"
    """The inner handler's answer with a content-length 5 octets short of its body (RFC 9113 §8.1.1: malformed)."""
    BODY_UNDER_DECLARED = "body-under-declared"
    """The inner handler's answer with a content-length 5 octets over its body, and END_STREAM after the body."""
    CONNECTION_HEADER = "connection-header"
    """The inner handler's answer with a ``connection: keep-alive`` header (RFC 9113 §8.2.2: malformed)."""

    @property
    def needs_inner(self) -> bool:
        return self in _INNER_MODES


_INNER_MODES = frozenset({Mode.WRONG_MEDIA_TYPE, Mode.NO_CLIENT_CERT_REQUEST, Mode.LATE_HEADERS,
                          Mode.VALID_THEN_HANG, Mode.VALID_THEN_CLOSE, Mode.CBOR_AS_HTML, Mode.TRUNCATED_BODY,
                          Mode.GRACEFUL_GOAWAY, Mode.INFORMATIONAL_FIRST, Mode.TRAILERS, Mode.SMALL_PADDED_FRAMES,
                          Mode.SHUTDOWN_NOTICE, Mode.ONE_STREAM, Mode.FRAME_NOISE, Mode.SMALL_WINDOW,
                          Mode.CLOSE_WHEN_IDLE, Mode.PUSH_PROMISE, Mode.RESET_AFTER_ANSWER, Mode.LONG_HEADERS,
                          Mode.BODY_OVER_DECLARED, Mode.BODY_UNDER_DECLARED, Mode.CONNECTION_HEADER,
                          Mode.KEEPALIVE_LIMIT, Mode.LATE_END_STREAM})
CONFORMANT = frozenset({Mode.GRACEFUL_GOAWAY, Mode.INFORMATIONAL_FIRST, Mode.TRAILERS, Mode.SMALL_PADDED_FRAMES,
                        Mode.SHUTDOWN_NOTICE, Mode.ONE_STREAM, Mode.FRAME_NOISE, Mode.SMALL_WINDOW,
                        Mode.CLOSE_WHEN_IDLE, Mode.RESET_AFTER_ANSWER, Mode.LONG_HEADERS, Mode.KEEPALIVE_LIMIT,
                        Mode.LATE_END_STREAM})
"""Modes in which the server only does what HTTP/2 allows: a harness must judge the inner handler as if direct."""
_SETTINGS = {Mode.ZERO_WINDOW: {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0},
             Mode.NO_STREAMS: {h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 0},
             Mode.ONE_STREAM: {h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1},
             Mode.SMALL_WINDOW: {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16},
             Mode.EARLY_ANSWER: {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16}}
UNKNOWN_FRAME_TYPE = 0xFA
"""A frame type no RFC defines: RFC 9113 §5.5 says a receiver ignores it."""
UNKNOWN_SETTING = 0xFAFA
"""A SETTINGS identifier no RFC defines: RFC 9113 §6.5.2 says a receiver ignores it."""
SHUTDOWN_PING = b"shutdown"
LAST_STREAM_ID = (1 << 31) - 1

GARBAGE = b"\xff\xfe<html>not CBOR</html>"
"""0xff is a CBOR "break" with nothing to end: not well-formed (RFC 8949 §3.2.1)."""
CHUNK = bytes(16_384)
LONG_HEADER = ("sdcp-conformance-long", "x" * 24_000)
"""Over 16,384 octets once HPACK-encoded (Huffman codes 'x' in 7 bits): more than one frame's worth."""
INFORMATIONAL_INTERVAL_S = 0.02


@dataclass(frozen=True)
class MisbehavingConfig:
    mode: Mode
    cert: Path
    key: Path
    ca: Path
    """The CA client certificates are checked against (unless the mode asks for none)."""
    other_cert: Path | None = None
    other_key: Path | None = None
    """The certificate of :attr:`Mode.OTHER_CA` (e.g. ``pki.wrong_ca``)."""
    inner: Handler | None = None
    host: str = "127.0.0.1"
    port: int = 0
    drip_interval_s: float = 1.0
    late_s: float = 10.0
    valid_requests: int = 2
    goaway_every: int = 2
    huge_length: int = 2 << 30

    def __post_init__(self) -> None:
        if self.mode.needs_inner and self.inner is None:
            raise InvalidArgument(f"mode {self.mode.value} answers with an inner handler; none was given")
        if self.mode is Mode.OTHER_CA and (self.other_cert is None or self.other_key is None):
            raise InvalidArgument("mode other-ca needs other_cert and other_key")


@dataclass
class MisbehavingStats:
    connections: int = 0
    requests: int = 0
    goaways: int = 0
    answered: int = 0


def _ssl_context(config: MisbehavingConfig) -> ssl.SSLContext | None:
    if config.mode is Mode.STALLED_HANDSHAKE:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    version = ssl.TLSVersion.TLSv1_2 if config.mode is Mode.TLS12_ONLY else ssl.TLSVersion.TLSv1_3
    ctx.minimum_version = ctx.maximum_version = version
    ctx.set_alpn_protocols(["http/1.1"] if config.mode is Mode.HTTP11_ONLY else ["h2"])
    if config.mode is Mode.OTHER_CA:
        assert config.other_cert is not None and config.other_key is not None
        ctx.load_cert_chain(config.other_cert, config.other_key)
    else:
        ctx.load_cert_chain(config.cert, config.key)
    ctx.load_verify_locations(cafile=config.ca)
    ctx.verify_mode = ssl.CERT_NONE if config.mode is Mode.NO_CLIENT_CERT_REQUEST else ssl.CERT_REQUIRED
    return ctx


class MisbehavingServer:
    """``server = MisbehavingServer(config); await server.start(); …; await server.stop()``."""

    def __init__(self, config: MisbehavingConfig) -> None:
        self.config = config
        self.stats = MisbehavingStats()
        self._server: asyncio.Server | None = None
        self.connections: set[_Connection] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        context = _ssl_context(self.config)
        if context is None:
            self._server = await loop.create_server(lambda: _Connection(self), self.config.host, self.config.port)
        else:  # the TLS layer sends the alert of a failed handshake, as a real TLS 1.2-only server does
            self._server = await serve_tls(lambda: _Connection(self), context, self.config.host, self.config.port,
                                           handshake_timeout=60.0, shutdown_timeout=2.0)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for connection in list(self.connections):
            connection.abort()
        await self._server.wait_closed()
        self._server = None

    @property
    def port(self) -> int:
        return listening_port(self._server)

    async def __aenter__(self) -> MisbehavingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class _Connection(asyncio.Protocol):
    def __init__(self, server: MisbehavingServer) -> None:
        self.server = server
        self.mode = server.config.mode
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        # KEEPALIVE_LIMIT is h2 as it comes, as hypercorn runs it: its state machine closes with the GOAWAY.
        self.h2 = H2Connection(config) if self.mode is Mode.KEEPALIVE_LIMIT else GoawayAwareConnection(config)
        self.transport: asyncio.Transport | None = None
        self.http1 = False
        self.identity: str | None = None
        self.headers: dict[int, list[tuple[bytes, bytes]]] = {}
        self.bodies: dict[int, bytearray] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.windows: dict[int, asyncio.Event] = {}
        self.streams_seen = 0
        self.streams_received = 0
        self.highest_stream = 0
        self.goaway_last: int | None = None
        self.notice_sent = False

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)
        self.server.stats.connections += 1
        if self.mode is Mode.STALLED_HANDSHAKE:
            return  # TCP only: the client's ClientHello is never answered
        if self.mode is Mode.CLOSE_AFTER_HANDSHAKE:
            transport.close()
            return
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
            self.http1 = True
            return
        self.identity = peer_uri_san(transport.get_extra_info("peercert"))
        if self.mode in _SETTINGS:  # in the server's first SETTINGS frame, so the client never sees others
            self.h2.local_settings = h2.settings.Settings(client=False, initial_values=_SETTINGS[self.mode])
        self.h2.initiate_connection()
        self.flush()
        if self.mode is Mode.GOAWAY_AT_ONCE:
            self._goaway(0)

    def data_received(self, data: bytes) -> None:
        if self.mode is Mode.STALLED_HANDSHAKE:
            return
        if self.http1:
            self._answer_http1()
            return
        error = receive_events(self.h2, data, self._dispatch)
        self.flush()
        if error is not None:
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        for task in self.tasks.values():
            task.cancel()
        for event in self.windows.values():
            event.set()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def flush(self) -> None:
        write_queued(self.h2, self.transport)

    def _answer_http1(self) -> None:
        assert self.transport is not None
        if self.mode is not Mode.HTTP11_ONLY:  # every other mode misbehaves in its own way only (P1-TLS-1: 505)
            self.transport.write(b"HTTP/1.1 505 HTTP Version Not Supported\r\nconnection: close\r\n"
                                 b"content-length: 0\r\n\r\n")
            self.close()
            return
        body = encode({"http": "1.1"})
        self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-type: " + SDCP_MEDIA_TYPE.encode() +
                             b"\r\nconnection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" +
                             body)
        self.close()

    # -- h2 events ----------------------------------------------------------------------

    def _dispatch(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self.highest_stream = max(self.highest_stream, event.stream_id)
            self.headers[event.stream_id] = list(event.headers or ())
            self.bodies[event.stream_id] = bytearray()
            self.streams_received += 1
            if self.mode is Mode.EARLY_ANSWER:
                self._early_answer(event.stream_id)
            elif (self.mode is Mode.KEEPALIVE_LIMIT and self.goaway_last is None
                  and self.streams_received > self.server.config.goaway_every):
                # hypercorn's protocol/h2.py: `if self.keep_alive_requests > max_requests: close_connection()`.
                self.goaway_last = self.highest_stream
                self.h2.close_connection()
                self.server.stats.goaways += 1
        elif isinstance(event, h2.events.DataReceived):
            self.bodies.setdefault(event.stream_id, bytearray()).extend(event.data or b"")
            self.h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self._on_request(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            task = self.tasks.pop(event.stream_id, None)
            if task is not None:
                task.cancel()
        elif isinstance(event, h2.events.WindowUpdated):
            for stream_id, window in self.windows.items():
                if event.stream_id in (0, stream_id):
                    window.set()
        elif isinstance(event, h2.events.PingAckReceived):
            if event.ping_data == SHUTDOWN_PING and self.goaway_last is None:
                self._goaway(self.highest_stream)  # the second step: every stream that reached the server
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.close()

    def _goaway(self, last_stream_id: int) -> None:
        """GOAWAY(NO_ERROR) naming ``last_stream_id``: streams above it are refused, the rest answered, then the
        connection closes."""
        self.goaway_last = last_stream_id
        self.h2.close_connection(ErrorCodes.NO_ERROR, last_stream_id=last_stream_id)
        self.server.stats.goaways += 1
        self.flush()
        if not self.tasks and not self.headers:
            self.close()

    def _on_request(self, stream_id: int) -> None:
        headers = self.headers.pop(stream_id, None)
        body = self.bodies.pop(stream_id, bytearray())
        if headers is None:
            return
        if self.goaway_last is not None and stream_id > self.goaway_last and self.mode is not Mode.KEEPALIVE_LIMIT:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.h2.reset_stream(stream_id, ErrorCodes.REFUSED_STREAM)
            return
        self.server.stats.requests += 1
        self.streams_seen += 1
        if (self.mode is Mode.GRACEFUL_GOAWAY and self.goaway_last is None
                and self.streams_seen >= self.server.config.goaway_every):
            # GOAWAY(NO_ERROR) naming this stream goes out before any answer it still owes; streams above it
            # (already received or not) are refused unprocessed, which RFC 9113 §8.7 lets the client resend.
            self.goaway_last = stream_id
            self.h2.close_connection(ErrorCodes.NO_ERROR, last_stream_id=stream_id)
            self.server.stats.goaways += 1
            self.flush()
        if (self.mode is Mode.SHUTDOWN_NOTICE and not self.notice_sent
                and self.streams_seen >= self.server.config.goaway_every):
            # The first step warns without refusing anything; the PING's ACK shows that every stream the client
            # opened before it saw the warning has arrived, so the second GOAWAY can name them all.
            self.notice_sent = True
            self.h2.close_connection(ErrorCodes.NO_ERROR, last_stream_id=LAST_STREAM_ID)
            self.h2.ping(SHUTDOWN_PING)
            self.flush()
        request = make_request(headers, bytes(body), self.identity)
        self.tasks[stream_id] = asyncio.ensure_future(self._serve(stream_id, request))

    def _early_answer(self, stream_id: int) -> None:
        """A complete answer while the request body is still stuck behind a 16-octet window, then RST_STREAM
        (NO_ERROR): RFC 9113 §8.1's way to ask the client to stop sending a body the answer did not need."""
        self.headers.pop(stream_id, None)
        self.bodies.pop(stream_id, None)
        self.server.stats.requests += 1
        response = status_problem_response(413, "the misbehaving server answers before reading the body")
        self.h2.send_headers(stream_id, [(":status", "413"), ("content-length", str(len(response.body))),
                                         *((k.lower(), v) for k, v in response.headers)])
        self.h2.send_data(stream_id, response.body, end_stream=True)
        self.h2.reset_stream(stream_id, ErrorCodes.NO_ERROR)
        self.server.stats.answered += 1

    # -- misbehaving ----------------------------------------------------------------------

    async def _serve(self, stream_id: int, request: Request) -> None:
        try:
            await self._misbehave(stream_id, request)
        except (h2.exceptions.ProtocolError, ConnectionError):
            pass  # the client reset the stream or went away: that is its right
        finally:
            self.tasks.pop(stream_id, None)
            self.flush()
            if self.mode is Mode.KEEPALIVE_LIMIT:
                pass  # h2 closed its state machine: the connection waits for the client's next frame, as hypercorn
            elif self.goaway_last is not None and not self.tasks and not self.headers:
                self.close()
            elif self.mode is Mode.CLOSE_WHEN_IDLE and self.goaway_last is None and not self.tasks and not self.headers:
                self._goaway(self.highest_stream)

    async def _misbehave(self, stream_id: int, request: Request) -> None:
        mode, config = self.mode, self.server.config
        if mode is Mode.HANG or (mode is Mode.VALID_THEN_HANG and self.server.stats.requests > config.valid_requests):
            await asyncio.Event().wait()  # until the client resets the stream or the connection closes
        elif mode is Mode.VALID_THEN_CLOSE and self.server.stats.requests > config.valid_requests:
            self.close()  # TLS close_notify and FIN, no GOAWAY: the stream is left open
        elif mode in (Mode.STREAM_RESET, Mode.REFUSED_STREAMS):
            code = ErrorCodes.REFUSED_STREAM if mode is Mode.REFUSED_STREAMS else ErrorCodes.INTERNAL_ERROR
            self.h2.reset_stream(stream_id, code)
        elif mode is Mode.GOAWAY_ERROR:
            self.h2.close_connection(ErrorCodes.INTERNAL_ERROR, last_stream_id=stream_id)
            self.flush()
            self.close()
        elif mode is Mode.DRIP_BODY:
            await self._drip(stream_id)
        elif mode is Mode.GARBAGE_CBOR:
            await self._send(stream_id, Response(200, GARBAGE, [("content-type", SDCP_MEDIA_TYPE)]))
        elif mode is Mode.WRONG_SHAPE:
            await self._send(stream_id, Response(200, encode({"hello": "world", "n": [1, 2]}),
                                                 [("content-type", SDCP_MEDIA_TYPE)]))
        elif mode is Mode.STATUS_500_WITH_BODY:
            await self._send(stream_id, status_problem_response(500, "the misbehaving server fails on purpose"))
        elif mode is Mode.STATUS_500_WITHOUT_BODY:
            await self._send(stream_id, Response(500))
        elif mode is Mode.BAD_STATUS:  # h2 builds no such frame: the header block is encoded by hand
            block = self.h2.encoder.encode([(":status", "2xx"), ("content-type", SDCP_MEDIA_TYPE)])
            self.flush()
            if self.transport is not None:
                self.transport.write(HeadersFrame(stream_id, block, flags=["END_HEADERS", "END_STREAM"]).serialize())
        elif mode is Mode.CONTINUATION_FLOOD:
            await self._continuation_flood(stream_id)
        elif mode is Mode.ENDLESS_INFORMATIONAL:
            while True:  # until the client resets the stream or the connection closes
                self.h2.send_headers(stream_id, [(":status", "103"), ("link", "</cache/>; rel=preconnect")])
                self.flush()
                await asyncio.sleep(INFORMATIONAL_INTERVAL_S)
        elif mode is Mode.DATA_BEFORE_HEADERS:
            self._raw(DataFrame(stream_id, encode({"hello": "world"}), flags=["END_STREAM"]).serialize())
        elif mode in (Mode.BODY_OVER_DECLARED, Mode.BODY_UNDER_DECLARED, Mode.CONNECTION_HEADER):
            await self._malformed(stream_id, await self._inner(request))
        elif mode in (Mode.HUGE_BODY, Mode.HUGE_BODY_UNDECLARED):
            await self._huge(stream_id, declared=mode is Mode.HUGE_BODY)
        elif mode is Mode.TRUNCATED_BODY:
            await self._truncated(stream_id, await self._inner(request))
        elif mode in (Mode.GRACEFUL_GOAWAY, Mode.SHUTDOWN_NOTICE):
            await self._graceful(stream_id, request)
        elif mode is Mode.FRAME_NOISE:
            self._noise(stream_id)
            await self._send(stream_id, await self._inner(request))
        elif mode is Mode.PUSH_PROMISE:
            self._push(stream_id)
            await self._send(stream_id, await self._inner(request))
        elif mode is Mode.INFORMATIONAL_FIRST:
            self.h2.send_headers(stream_id, [(":status", "103"), ("link", "</cache/>; rel=preconnect")])
            self.flush()
            await self._send(stream_id, await self._inner(request))
        elif mode in (Mode.TRAILERS, Mode.SMALL_PADDED_FRAMES, Mode.ONE_STREAM, Mode.SMALL_WINDOW,
                      Mode.CLOSE_WHEN_IDLE, Mode.VALID_THEN_CLOSE, Mode.LONG_HEADERS, Mode.KEEPALIVE_LIMIT,
                      Mode.LATE_END_STREAM):
            await self._send(stream_id, await self._inner(request))
        elif mode is Mode.RESET_AFTER_ANSWER:
            await self._send(stream_id, await self._inner(request))
            # The stream is closed in h2's eyes once both sides ended it, so h2 sends nothing more on it.
            self._raw(RstStreamFrame(stream_id, error_code=ErrorCodes.NO_ERROR).serialize())
        else:
            await self._relabelled(stream_id, request)

    def _noise(self, stream_id: int) -> None:
        """Frames a client must answer (PING) or ignore (the rest), written raw: h2 builds none of the others."""
        self.h2.ping(b"noise!!!")
        self.flush()
        if self.transport is None or self.transport.is_closing():
            return
        payload = b"sdcp-conformance noise"
        unknown = (len(payload).to_bytes(3, "big") + bytes([UNKNOWN_FRAME_TYPE, 0xFF]) + stream_id.to_bytes(4, "big")
                   + payload)  # hyperframe's ExtensionFrame serialises a zero length
        self.transport.write(PriorityFrame(stream_id, depends_on=0, stream_weight=15).serialize() + unknown
                             + SettingsFrame(0, settings={UNKNOWN_SETTING: 1}).serialize())

    def _raw(self, frames: bytes) -> None:
        """Frames h2 would refuse to build, written after what h2 has queued."""
        self.flush()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frames)

    async def _continuation_flood(self, stream_id: int) -> None:
        block = self.h2.encoder.encode([(":status", "200"), ("content-type", SDCP_MEDIA_TYPE)])
        self._raw(HeadersFrame(stream_id, block).serialize())  # no END_HEADERS: the block goes on
        filler = ContinuationFrame(stream_id, b"\x00" * 1024).serialize()  # literal fields of empty names, unended
        while self.transport is not None and not self.transport.is_closing():
            self._raw(filler)
            while self.transport is not None and self.transport.get_write_buffer_size() > 1 << 16:
                await asyncio.sleep(0.005)  # as fast as the client reads, never faster
            await asyncio.sleep(0)

    async def _malformed(self, stream_id: int, response: Response) -> None:
        """The answer's header block encoded by hand (h2 validates what it sends), then its body raw."""
        body = response.body
        declared = len(body) + {Mode.BODY_OVER_DECLARED: -5, Mode.BODY_UNDER_DECLARED: 5}.get(self.mode, 0)
        headers = [(":status", str(response.status)), ("content-length", str(declared)),
                   *((k.lower(), v) for k, v in response.headers if k.lower() != "content-length")]
        if self.mode is Mode.CONNECTION_HEADER:
            headers.append(("connection", "keep-alive"))
        block = self.h2.encoder.encode(headers)
        self._raw(HeadersFrame(stream_id, block, flags=["END_HEADERS"]).serialize()
                  + DataFrame(stream_id, body, flags=["END_STREAM"]).serialize())

    def _push(self, stream_id: int) -> None:
        """A PUSH_PROMISE and its response, written raw: h2 refuses to push to a client that turned push off."""
        promised = 2 * stream_id  # even, as server-initiated streams are, and never promised twice
        request = self.h2.encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", "localhost"),
                                          (":path", "/pushed")])
        response = self.h2.encoder.encode([(":status", "200"), ("content-length", "0")])
        self.flush()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(PushPromiseFrame(stream_id, promised_stream_id=promised, data=request,
                                                  flags=["END_HEADERS"]).serialize()
                                 + HeadersFrame(promised, response, flags=["END_HEADERS", "END_STREAM"]).serialize())

    async def _inner(self, request: Request) -> Response:
        inner = self.server.config.inner
        assert inner is not None
        return await inner(request)

    async def _relabelled(self, stream_id: int, request: Request) -> Response:
        mode, config = self.mode, self.server.config
        if mode is Mode.LATE_HEADERS:
            await asyncio.sleep(config.late_s)  # the misbehaviour itself: the answer comes late
        response = await self._inner(request)
        label = {Mode.WRONG_MEDIA_TYPE: "application/json", Mode.CBOR_AS_HTML: "text/html"}.get(mode)
        if label is not None and response.body and 200 <= response.status < 300:
            response.headers = [(k, v) for k, v in response.headers if k.lower() != "content-type"]
            response.headers.append(("content-type", label))
        await self._send(stream_id, response)
        return response

    async def _graceful(self, stream_id: int, request: Request) -> None:
        if self.goaway_last is not None and stream_id > self.goaway_last:
            self.h2.reset_stream(stream_id, ErrorCodes.REFUSED_STREAM)  # received before the GOAWAY, not processed
            self.server.stats.requests -= 1
            return
        await self._send(stream_id, await self._inner(request))

    async def _drip(self, stream_id: int) -> None:
        headers = [(":status", "200"), ("content-type", SDCP_MEDIA_TYPE), ("content-length", "1000")]
        self.h2.send_headers(stream_id, headers)
        self.flush()
        for _ in range(1000):
            await asyncio.sleep(self.server.config.drip_interval_s)  # the misbehaviour: a byte at a time
            self.h2.send_data(stream_id, b"\xa0")
            self.flush()

    async def _huge(self, stream_id: int, *, declared: bool) -> None:
        length = self.server.config.huge_length
        headers = [(":status", "200"), ("content-type", SDCP_MEDIA_TYPE)]
        if declared:
            headers.append(("content-length", str(length)))
        self.h2.send_headers(stream_id, headers)
        sent = 0
        while sent < length:
            window = min(self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size,
                         length - sent)
            if window <= 0:
                await self._wait_window(stream_id)
                continue
            self.h2.send_data(stream_id, CHUNK[:window], end_stream=sent + window == length)
            sent += window
            self.flush()
            await asyncio.sleep(0)  # let the client's frames (its RST_STREAM) in between

    async def _truncated(self, stream_id: int, response: Response) -> None:
        body = response.body or encode({"truncated": True})
        headers = [(":status", str(response.status)), ("content-length", str(len(body))),
                   *((k.lower(), v) for k, v in response.headers if k.lower() != "content-length")]
        self.h2.send_headers(stream_id, headers)
        self.h2.send_data(stream_id, body[: len(body) // 2])
        self.flush()
        if self.transport is not None:
            self.transport.close()  # after the half body is written: the stream never ends

    async def _send(self, stream_id: int, response: Response) -> None:
        body = response.body
        trailers = self.mode in (Mode.TRAILERS, Mode.LATE_END_STREAM)
        small = self.mode is Mode.SMALL_PADDED_FRAMES
        headers = [(":status", str(response.status)), ("content-length", str(len(body))),
                   *((k.lower(), v) for k, v in response.headers if k.lower() != "content-length")]
        self.h2.send_headers(stream_id, headers, end_stream=not body and not trailers)
        view = memoryview(body)
        while view:
            window = min(self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size)
            if small:  # 7 octets of data and 200 of padding (and the pad-length octet) per frame
                window = min(len(view), 7) if window >= 208 else 0
            if window <= 0:
                self.flush()
                await self._wait_window(stream_id)
                continue
            chunk, view = view[:window], view[window:]
            self.h2.send_data(stream_id, bytes(chunk), end_stream=not view and not trailers,
                              pad_length=200 if small else None)
            if small:
                self.flush()
        if self.mode is Mode.LATE_END_STREAM:
            self.flush()
            await asyncio.sleep(self.server.config.late_s)  # the server's own pace: the misbehaviour under test
            self.h2.send_data(stream_id, b"", end_stream=True)
        elif trailers:
            self.h2.send_headers(stream_id, [("sdcp-conformance-trailer", "1")], end_stream=True)
        self.flush()
        self.server.stats.answered += 1

    async def _wait_window(self, stream_id: int) -> None:
        window = self.windows.setdefault(stream_id, asyncio.Event())
        window.clear()
        self.flush()
        try:
            await window.wait()
        finally:
            self.windows.pop(stream_id, None)
        if self.transport is None or self.transport.is_closing():
            raise ConnectionError("the connection closed while waiting for the client's window")


__all__ = ["CONFORMANT", "GARBAGE", "MisbehavingConfig", "MisbehavingServer", "MisbehavingStats", "Mode"]
