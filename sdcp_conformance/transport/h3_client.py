"""The project's HTTP/3 client (aioquic): :class:`~.h2client.H2Client`'s interface and behaviour, over QUIC.

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual
certificate authentication is REQUIRED." The client offers ALPN ``h3`` only,
presents its certificate when the server asks, verifies the server's chain
against the CA and its IP/DNS SAN (aioquic), and, given ``expected_uri``, that
the server's certificate names exactly that party (P1-ID-1, D-TLS-3:
:func:`~.tls.names_party`).

A drop-in for the HTTP/2 client where a party speaks HTTP/3: the same
constructor keywords (``timeouts``, ``max_attempts``, ``max_response_bytes``),
the same ``request`` parameters, attributes (``connections``,
``connections_opened``) and answers (:class:`~.exchange.ClientResponse`,
:class:`~.failures.TransportFailure`), and the same policies from
:mod:`.exchange`:

* **Retries** where :func:`~.exchange.is_retry_safe` says (or ``retry=``), up
  to ``max_attempts``, by :func:`~.exchange.send_with_retries`.
* **Deadlines.** Each attempt has one deadline (``timeout=``, or
  :attr:`Timeouts.attempt`), moved later by what ``extension`` grants when it
  comes (:data:`~.exchange.Extension`); a response whose declared
  content-length has fully arrived is complete then (D-H2C-8). On expiry the
  stage is the step the request was waiting on: ``tls-stalled`` (the QUIC
  handshake), ``h3-settings`` (handshake done, the server's SETTINGS did not
  come), ``upload-stalled``, ``headers-timeout``, ``body-stalled``.
* **Bounded reads.** A response declaring more than ``max_response_bytes`` is
  refused at its headers, one exceeding it while streaming is cut there
  (``body-over-limit``, the evidence the HTTP/2 client gives), and the stream
  is cancelled at once.
* **Cancellation.** A request given up on (its caller cancelled it, its
  deadline expired, its body is over the limit) is cancelled both ways with
  H3_REQUEST_CANCELLED (RFC 9114 §4.1.1: RESET_STREAM for what it still sends,
  STOP_SENDING for what the server sends) and forgotten; an opening given up on
  closes its QUIC connection and UDP socket at once.
* **Stages** where the HTTP/2 ones carry over (``tls-alert`` for a server's
  CRYPTO_ERROR, RFC 9001 §4.8, ``tls-certificate``, ``alpn``, ``stream-reset``,
  ``connection-lost``, ``body-truncated``), and two of HTTP/3's own:
  ``h3-settings`` and ``h3-protocol`` (the client's aioquic closed the
  connection because the server broke HTTP/3 or QUIC). Error codes are named
  (RFC 9114 §8.1, RFC 9000 §20).

Not yet (H3_NOTES.md): GOAWAY handling and the resending of requests the
server never processed (H3_REQUEST_REJECTED), more than one connection at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from aioquic.h3.connection import ErrorCode, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection, QuicConnectionState
from aioquic.quic.packet import QuicErrorCode, QuicFrameType
from cryptography import x509

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
from sdcp_conformance.transport.failures import ConnectionInfo, FailureKind, Stage, TransportFailure
from sdcp_conformance.transport.h2client_connection import ClientStream
from sdcp_conformance.transport.h3_client_auth import (
    CRYPTO_ERROR,
    Alert,
    alert_of,
    check_aioquic,
    delay_application_acks,
    load_ca,
    peer_chain,
    uri_sans,
    verify_server_chain,
)
from sdcp_conformance.transport.h3_protocol import CoalescingProtocol
from sdcp_conformance.transport.h3_server import ALPN_H3
from sdcp_conformance.transport.tls import names_party

CANCELLED = ErrorCode.H3_REQUEST_CANCELLED
"""RFC 9114 §4.1.1: the error code of a request the client gave up on, both ways."""


def _close_words(close: events.ConnectionTerminated) -> tuple[str, str, str | None]:
    """A CONNECTION_CLOSE's error by name, its reason, and the TLS alert it carries (a CRYPTO close only)."""
    alert = alert_of(close.error_code) if close.frame_type is not None else None
    return _error_name(close.error_code, close.frame_type), close.reason_phrase or "no reason given", alert


def _error_name(code: int, frame_type: int | None) -> str:
    """A connection's error code by name: QUIC's (RFC 9000 §20) for a transport close (``frame_type`` given),
    HTTP/3's (RFC 9114 §8.1) for an application close; unknown codes in hex."""
    if frame_type is not None and CRYPTO_ERROR <= code <= CRYPTO_ERROR + 0xFF:
        return f"CRYPTO_ERROR({alert_of(code)})"
    with contextlib.suppress(ValueError):
        return QuicErrorCode(code).name if frame_type is not None else ErrorCode(code).name
    return f"0x{code:x}"


def _stream_error_name(code: int) -> str:
    """A stream's error code (RESET_STREAM, STOP_SENDING) by its RFC 9114 §8.1 name; unknown codes in hex."""
    with contextlib.suppress(ValueError):
        return ErrorCode(code).name
    return f"0x{code:x}"


class _ClientProtocol(CoalescingProtocol):
    """One client QUIC connection: checks the server's identity at the handshake, then reads HTTP/3 responses."""

    def __init__(self, quic: QuicConnection, *, number: int, host: str, anchors: list[x509.Certificate],
                 expected_uri: str | None, max_response_bytes: int) -> None:
        super().__init__(quic)
        self.host = host
        self.anchors = anchors
        self.expected_uri = expected_uri
        self.max_response_bytes = max_response_bytes
        self.h3: H3Connection | None = None
        self.info = ConnectionInfo(number, None, None)
        self.handshake_done = False
        """The QUIC handshake completed and the server was accepted (chain, ALPN h3, its party)."""
        self.ready: asyncio.Future[None] = self._loop.create_future()
        """Resolved when the server's SETTINGS arrived (it accepted us); failed with the connection's failure."""
        self.failure: TransportFailure | None = None
        self.streams: dict[int, ClientStream] = {}

    @property
    def usable(self) -> bool:
        return self.failure is None

    # -- QUIC events ----------------------------------------------------------------------

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        super().datagram_received(data, addr)
        self._check_closed()

    def quic_event_received(self, event: events.QuicEvent) -> None:
        if isinstance(event, events.HandshakeCompleted):
            self._check_server(event)
        elif isinstance(event, events.ConnectionTerminated):
            self._fail(self._terminated(event))
            return
        elif isinstance(event, events.StreamReset) and event.stream_id in self.streams:
            self._reset_by_server(event.stream_id, event.error_code)
        if self.h3 is not None:
            for h3_event in self.h3.handle_event(event):
                self._dispatch(h3_event)
            self._check_closed()
            if self.h3.received_settings is not None and not self.ready.done():
                self.ready.set_result(None)

    def _check_closed(self) -> None:
        """A CONNECTION_CLOSE came, or the client's own QUIC or HTTP/3 layer sent one: fail now.

        aioquic reports a close (ConnectionTerminated) only once its draining or closing period is over (three
        PTOs, RFC 9000 §10.2): the requests on the connection fail when the close happens, not then."""
        close = self._quic._close_event
        if close is None or self.failure is not None:
            return
        if self._quic._state is QuicConnectionState.DRAINING:  # the server closed it
            self._fail(self._terminated(close))
        else:  # aioquic closed it: the server broke QUIC or HTTP/3 (our own closes set the failure first)
            self._fail(self._closed_here(close))

    def _check_server(self, event: events.HandshakeCompleted) -> None:
        chain = peer_chain(self._quic)
        peer_uris = uri_sans(chain[0]) if chain else ()
        refusal = verify_server_chain(chain, self.anchors, self.host)
        if refusal is not None:
            self._refuse(refusal.alert, TransportFailure.at(Stage.TLS_CERTIFICATE, refusal.detail,
                                                            certificate_error=refusal.detail))
        elif event.alpn_protocol != ALPN_H3:
            self._refuse(Alert.NO_APPLICATION_PROTOCOL, TransportFailure.at(
                Stage.ALPN, f"the server selected ALPN {event.alpn_protocol!r}, not h3", tls_version="TLSv1.3",
                alpn=event.alpn_protocol))
        elif self.expected_uri is not None and not names_party(peer_uris, self.expected_uri):
            self._refuse(Alert.BAD_CERTIFICATE, TransportFailure.at(
                Stage.TLS_CERTIFICATE, f"the server's certificate names {list(peer_uris)}, not "
                f"{self.expected_uri} (P1-ID-1)", certificate_error="URI SAN mismatch"))
        else:
            self.info = ConnectionInfo(self.info.number, "TLSv1.3", event.alpn_protocol, peer_uris)
            self.handshake_done = True
            self.h3 = H3Connection(self._quic)
            delay_application_acks(self._quic)

    def _refuse(self, alert: int, failure: TransportFailure) -> None:
        self._fail(failure)
        self._quic.close(error_code=CRYPTO_ERROR + alert, frame_type=QuicFrameType.CRYPTO,
                         reason_phrase=failure.detail)
        self.transmit()

    def _terminated(self, close: events.ConnectionTerminated) -> TransportFailure:
        """The failure a close by the server (or the end of an idle connection) is."""
        name, reason, alert = _close_words(close)
        if alert is not None:
            return TransportFailure.at(Stage.TLS_ALERT, f"the server closed the connection with alert {alert}: "
                                       f"{reason}", alert=alert)
        if not self.handshake_done:
            return TransportFailure.at(Stage.TLS_ERROR, f"the connection ended during the QUIC handshake ({name}: "
                                       f"{reason})", error_code=name)
        if not self.ready.done():
            return TransportFailure.at(Stage.H3_SETTINGS, f"the connection ended after the QUIC handshake, before "
                                       f"the server's HTTP/3 SETTINGS ({name}: {reason})", connection=self.info,
                                       tls_version=self.info.tls_version, alpn=self.info.alpn, error_code=name)
        return TransportFailure.at(Stage.CONNECTION_LOST, f"the connection ended ({name}: {reason})",
                                   connection=self.info, error_code=name)

    def _closed_here(self, close: events.ConnectionTerminated) -> TransportFailure:
        """The failure a close by the client's own aioquic is: the server broke TLS, QUIC or HTTP/3."""
        name, reason, alert = _close_words(close)
        if alert is not None:
            return TransportFailure.at(Stage.TLS_ERROR, f"the client's TLS ended the handshake with alert {alert} "
                                       f"({reason})", alert=alert)
        return TransportFailure.at(Stage.H3_PROTOCOL, f"the server broke HTTP/3 or QUIC: the client closed the "
                                   f"connection with {name} ({reason})", connection=self.info, error_code=name)

    def _fail(self, failure: TransportFailure) -> None:
        """The connection is over: ``ready`` and every stream fail (a stream mid-body as truncated)."""
        if self.failure is not None:
            return
        self.failure = failure
        if not self.ready.done():
            self.ready.set_exception(failure)
            self.ready.exception()  # retrieved: nobody may be waiting
        for stream_id, stream in list(self.streams.items()):
            stage, words = failure.stage or Stage.CONNECTION_LOST, failure.detail
            if stage is Stage.CONNECTION_LOST and stream.status:
                stage, words = Stage.BODY_TRUNCATED, f"{failure.detail} mid-body: {stream.words()}"
            elif stage is Stage.CONNECTION_LOST:
                words = f"{failure.detail}, so whether the request was processed is unknown"
            self.finish(stream_id, TransportFailure.at(
                stage, words, connection=self.info, stream_id=stream_id, error_code=failure.evidence.error_code,
                **(stream.evidence() if stream.status else {})))

    # -- streams --------------------------------------------------------------------------

    def open_stream(self, headers: list[tuple[bytes, bytes]], body: bytes) -> ClientStream:
        assert self.h3 is not None and self.failure is None
        stream_id = self._quic.get_next_available_stream_id()
        stream = self.streams[stream_id] = ClientStream(stream_id, self._loop.create_future())
        self.h3.send_headers(stream_id, headers, end_stream=not body)
        if body:
            self.h3.send_data(stream_id, body, end_stream=True)
        self.transmit_soon()
        return stream

    def uploading(self, stream_id: int) -> bool:
        """Whether the request's bytes are not all sent yet (the server's flow control holds them back)."""
        quic_stream = self._quic._streams.get(stream_id)
        return quic_stream is not None and not quic_stream.sender.buffer_is_empty

    def finish(self, stream_id: int, failure: TransportFailure | None) -> None:
        stream = self.streams.get(stream_id)
        if stream is None or stream.done.done():
            return
        if failure is None:
            stream.done.set_result(None)
        else:
            stream.done.set_exception(failure)
            stream.done.exception()  # retrieved: its request may be gone

    def cancel(self, stream_id: int) -> None:
        """Give up on a stream and forget it: RESET_STREAM and STOP_SENDING with H3_REQUEST_CANCELLED (RFC 9114
        §4.1.1), each only where that direction is still open."""
        self.streams.pop(stream_id, None)
        quic_stream = self._quic._streams.get(stream_id)
        if self.failure is not None or quic_stream is None:  # the connection is over, or the stream is done
            return
        if not quic_stream.sender.is_finished:
            self._quic.reset_stream(stream_id, CANCELLED)
            h3 = self.h3
            state = h3._stream.get(stream_id) if h3 is not None else None
            if h3 is not None and state is not None:
                # As aioquic records a reset it was asked for (STOP_SENDING): this side sends nothing more.
                state.sending_ended = True
                if state.is_ended():
                    del h3._stream[stream_id]
        if not quic_stream.receiver.is_finished:
            self._quic.stop_stream(stream_id, CANCELLED)
        self.transmit()

    def forget(self, stream_id: int) -> None:
        self.streams.pop(stream_id, None)

    def _reset_by_server(self, stream_id: int, code: int) -> None:
        stream = self.streams[stream_id]
        name = _stream_error_name(code)
        self.finish(stream_id, TransportFailure.at(
            Stage.STREAM_RESET, f"RESET_STREAM {name} by the server ({stream.words()})", connection=self.info,
            error_code=name, stream_id=stream_id, **stream.evidence()))
        self.cancel(stream_id)  # what the request still sends is not wanted either

    def _dispatch(self, event: H3Event) -> None:
        stream_id = getattr(event, "stream_id", -1)
        stream = self.streams.get(stream_id)
        if stream is None or stream.done.done():
            return  # a stream given up on, or not a request's
        if isinstance(event, HeadersReceived):
            if not stream.status:
                self._on_headers(stream, event)
        elif isinstance(event, DataReceived):
            stream.received += len(event.data)
            if stream.received > self.max_response_bytes:
                self._over_limit(stream, f"{stream.received} bytes received so far")
                return
            stream.body.append(event.data)
        if stream.done.done():
            return
        if getattr(event, "stream_ended", False):
            self.finish(stream_id, None)

    def _on_headers(self, stream: ClientStream, event: HeadersReceived) -> None:
        fields = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in event.headers]
        status = next((value for name, value in fields if name == ":status"), "")
        if not (len(status) == 3 and status.isdigit() and status[0] != "0"):
            self.finish(stream.id, TransportFailure.at(
                Stage.H3_PROTOCOL, f"the response's :status {status!r} is not a three-digit status code (a "
                "malformed response, RFC 9114 §4.1.2)", connection=self.info, stream_id=stream.id))
            self.cancel(stream.id)
            return
        if status.startswith("1"):
            return  # interim (RFC 9114 §4.1): the final response follows
        stream.status = int(status)
        stream.headers = [(name, value) for name, value in fields if not name.startswith(":")]
        length = next((value for name, value in stream.headers if name == "content-length"), None)
        if length is not None and length.isdigit():
            stream.content_length = int(length)
        if stream.content_length is not None and stream.content_length > self.max_response_bytes:
            self._over_limit(stream, f"the response declares {stream.content_length} bytes")

    def _over_limit(self, stream: ClientStream, what: str) -> None:
        """Stop reading at once: the request fails, its stream is cancelled and what was read dropped."""
        limit = self.max_response_bytes
        self.finish(stream.id, TransportFailure.at(
            Stage.BODY_OVER_LIMIT, f"{what}; the limit is {limit} (status {stream.status}, content-length "
            f"{stream.content_length}, {stream.received} bytes read)", connection=self.info, stream_id=stream.id,
            limit=limit, **stream.evidence()))
        stream.body.clear()
        self.cancel(stream.id)

    # -- the end --------------------------------------------------------------------------

    def discard(self) -> None:
        """Close now, whatever state the connection is in: CONNECTION_CLOSE sent if it can be, the streams failed,
        the timer stopped and the UDP socket closed (nothing left on the event loop)."""
        self._fail(TransportFailure.at(Stage.CONNECTION_LOST, "the client closed the connection",
                                       connection=self.info))
        with contextlib.suppress(Exception):
            self.close(error_code=ErrorCode.H3_NO_ERROR, reason_phrase="client closing")
        for handle in (self._timer, self._transmit_task):
            if handle is not None:
                handle.cancel()
        self._timer = self._transmit_task = None
        if self._transport is not None:
            self._transport.abort()


def _opening_stalled(dials: list[_ClientProtocol], what: str, deadline_s: float) -> TransportFailure:
    """A deadline came while a connection was being opened: the furthest step any opening waited on reached."""
    dial = next((dial for dial in dials if dial.handshake_done), None)
    if dial is None:
        return TransportFailure.at(Stage.TLS_STALLED, f"{what}no QUIC handshake (TLS 1.3) within {deadline_s:g} s",
                                   kind=FailureKind.TIMEOUT, deadline_s=deadline_s)
    info = dial.info
    return TransportFailure.at(Stage.H3_SETTINGS, f"{what}the QUIC handshake completed (ALPN {info.alpn}), but no "
                               f"HTTP/3 SETTINGS came from the server within {deadline_s:g} s",
                               kind=FailureKind.TIMEOUT, connection=info, tls_version=info.tls_version,
                               alpn=info.alpn, deadline_s=deadline_s)


class _Exchange:
    """What one attempt is waiting on: the openings it waited for, then its connection and stream."""

    __slots__ = ("dials", "protocol", "stream")

    def __init__(self) -> None:
        self.dials: list[_ClientProtocol] = []
        self.protocol: _ClientProtocol | None = None
        self.stream: ClientStream | None = None


class H3Client(RetryingRequests):
    """``async with H3Client(base_uri, cert, key, ca) as c: await c.request("POST", "proposals", body)``."""

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
        expected_uri: str | None = None,
    ) -> None:
        check_aioquic()
        parts = urlsplit(base_uri)
        if parts.scheme != "https" or parts.hostname is None:
            raise InvalidArgument(f"base URI {base_uri!r} needs https and a host")
        if max_response_bytes < 0:
            raise InvalidArgument(f"max_response_bytes must not be negative, not {max_response_bytes}")
        self.base_uri = base_uri if base_uri.endswith("/") else base_uri + "/"
        self._host, self._port = parts.hostname, parts.port or 443
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/") + "/"
        self.expected_uri = expected_uri
        self.timeouts = timeouts or Timeouts()
        self.max_attempts = max_attempts
        self.max_response_bytes = max_response_bytes
        # The server's chain and name are verified by verify_server_chain when the handshake completes (before
        # anything is sent): aioquic's own check cannot read SDCP's URI SANs (h3_client_auth). Its CertificateVerify
        # signature check (RFC 8446 §4.4.3) does not depend on verify_mode and stays on.
        self._configuration = QuicConfiguration(is_client=True, alpn_protocols=[ALPN_H3], server_name=self._host,
                                                verify_mode=ssl.CERT_NONE)
        self._anchors = load_ca(ca)
        if cert is not None:
            self._configuration.load_cert_chain(cert, key)
        self._connection: _ClientProtocol | None = None
        self._opening: _ClientProtocol | None = None
        """The connection being opened, if one is: a request waiting for it stalls where it stalls."""
        self._connecting = asyncio.Lock()
        self.connections: list[ConnectionInfo] = []
        """Every connection whose QUIC handshake completed (the newest :data:`~.exchange.MAX_CONNECTION_RECORDS`):
        number, TLS version, ALPN, the server's URI SANs."""
        self.connections_opened = 0

    async def aclose(self) -> None:
        """Close the connection and any being opened at once (CONNECTION_CLOSE sent; nothing is awaited)."""
        for protocol in (self._connection, self._opening):
            if protocol is not None:
                protocol.discard()
        self._connection = None

    async def connect(self) -> ConnectionInfo:
        """Open the connection now (requests otherwise open it on demand); waits for the server's SETTINGS."""
        return (await self._usable(_Exchange())).info

    async def _attempt(self, method: str, path: str, body: bytes, headers: dict[str, str] | None,
                       deadline_s: float, extension: Extension | None) -> ClientResponse:
        exchange = _Exchange()

        def answered() -> bool:
            protocol, stream = exchange.protocol, exchange.stream
            if stream is not None and stream.done.done():
                return True
            if protocol is not None and stream is not None and stream.complete_by_length():
                protocol.finish(stream.id, None)  # D-H2C-8, as the HTTP/2 client
                return True
            return False

        patience = AttemptDeadline(extension, answered)
        try:
            async with asyncio.timeout(None) as timer:
                patience.arm(timer, patience.started + deadline_s)
                connection = exchange.protocol = await self._usable(exchange)
                exchange.stream = connection.open_stream(self._request_headers(method, path, body, headers), body)
                await exchange.stream.done
        except (TimeoutError, asyncio.CancelledError) as exc:
            # Named before the stream is cancelled (which changes what it still has to send).
            failure = (self._timeout(method, path, exchange, deadline_s + patience.granted)
                       if isinstance(exc, TimeoutError) and patience.expired else None)
            if exchange.protocol is not None and exchange.stream is not None:
                exchange.protocol.cancel(exchange.stream.id)  # given up: never left to be answered unheard
            if failure is None:  # the caller gave up
                raise
            raise failure from exc
        finally:
            patience.disarm()
            if exchange.protocol is not None and exchange.stream is not None:
                exchange.protocol.forget(exchange.stream.id)
        protocol, stream = exchange.protocol, exchange.stream
        assert protocol is not None and stream is not None
        return ClientResponse(stream.status, tuple(stream.headers), b"".join(stream.body),
                              connection=protocol.info)

    def _timeout(self, method: str, path: str, exchange: _Exchange, deadline_s: float) -> TransportFailure:
        """Name the step that was waiting when the deadline expired: this request's own (the opening it waited
        on, its stream), never another request's."""
        protocol, stream = exchange.protocol, exchange.stream
        if protocol is None or stream is None:
            return _opening_stalled(exchange.dials, f"{method} {path}: ", deadline_s)
        info = protocol.info
        if not stream.status:
            stream.uploaded = not protocol.uploading(stream.id)
        return stream.stalled(f"{method} {path}", deadline_s, info)

    async def _usable(self, exchange: _Exchange) -> _ClientProtocol:
        connection = self._connection
        if connection is not None and connection.usable:
            return connection
        if self._opening is not None:  # waiting for the lock is waiting on that connection's handshake
            exchange.dials.append(self._opening)
        async with self._connecting:
            connection = self._connection
            if connection is None or not connection.usable:
                self._connection = None
                if connection is not None:
                    connection.discard()  # failed: its requests have failed with it
                connection = self._connection = await self._open(exchange)
            return connection

    async def _open(self, exchange: _Exchange) -> _ClientProtocol:
        """The QUIC handshake (TLS 1.3), then the server's SETTINGS, within :attr:`Timeouts.connect`; whatever
        ends it early (a failure, the deadline, the caller's cancellation) closes the connection and its socket."""
        loop = asyncio.get_running_loop()
        where = f"{self._host}:{self._port}"
        try:
            family, _, _, _, address = (await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_DGRAM))[0]
        except OSError as exc:
            raise TransportFailure.at(Stage.TCP_ERROR, f"cannot resolve {self._host} (for QUIC): {exc}") from exc
        local = ("::", 0) if family == socket.AF_INET6 else ("0.0.0.0", 0)
        number = self.connections_opened + 1
        quic = QuicConnection(configuration=self._configuration)

        def factory() -> _ClientProtocol:
            return _ClientProtocol(quic, number=number, host=self._host, anchors=self._anchors,
                                   expected_uri=self.expected_uri, max_response_bytes=self.max_response_bytes)

        try:  # cancelled while it waits, asyncio closes the endpoint itself
            _, protocol = await loop.create_datagram_endpoint(factory, local_addr=local)
        except OSError as exc:
            raise TransportFailure.at(Stage.TCP_ERROR, f"cannot open a UDP socket towards {where}: {exc}") from exc
        self._opening = protocol
        exchange.dials.append(protocol)
        try:
            protocol.connect(cast(Any, address))
            async with asyncio.timeout(self.timeouts.connect):
                await protocol.ready
        except TimeoutError as exc:
            protocol.discard()
            raise _opening_stalled([protocol], "", self.timeouts.connect) from exc
        except BaseException:
            protocol.discard()
            raise
        finally:
            self._opening = None
            if protocol.handshake_done:
                self.connections_opened = number
                self.connections.append(protocol.info)
                del self.connections[:-MAX_CONNECTION_RECORDS]
        return protocol

    def _request_headers(self, method: str, path: str, body: bytes,
                         headers: dict[str, str] | None) -> list[tuple[bytes, bytes]]:
        target = self._prefix + path.lstrip("/")
        head = [(b":method", method.encode()), (b":scheme", b"https"), (b":authority", self._authority.encode()),
                (b":path", target.encode()), (b"content-length", str(len(body)).encode())]
        head += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()
                 if name.lower() != "content-length"]
        return head


__all__ = ["CANCELLED", "H3Client"]
