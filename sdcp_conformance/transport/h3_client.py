"""The project's HTTP/3 client (aioquic): one peer, one identity, one QUIC connection, a deadline on every exchange.

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual
certificate authentication is REQUIRED." The client offers ALPN ``h3`` only,
presents its certificate when the server asks, verifies the server's chain
against the CA and its IP/DNS SAN (aioquic), and, given ``expected_uri``, that
the server's certificate names exactly that party (P1-ID-1, D-TLS-3:
:func:`~.tls.names_party`).

It answers with the HTTP/2 client's :class:`~.exchange.ClientResponse` and
fails with its :class:`~.failures.TransportFailure`, staged where the stages
carry over: ``tls-stalled`` (no handshake by the deadline), ``tls-alert`` (the
server closed with a CRYPTO_ERROR, RFC 9001 §4.8, its alert by name),
``tls-certificate`` (the server's certificate), ``alpn``, ``h2-preface`` (for
HTTP/3: the server's SETTINGS did not come), ``stream-reset``,
``connection-lost``, ``headers-timeout``/``body-stalled`` and
``body-over-limit``. No retries and no GOAWAY handling yet (H3_NOTES.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import urlsplit

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import ErrorCode, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.packet import QuicFrameType
from cryptography import x509

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.exchange import MAX_RESPONSE_BYTES, ClientResponse, Timeouts
from sdcp_conformance.transport.failures import ConnectionInfo, Stage, TransportFailure
from sdcp_conformance.transport.h3_client_auth import (
    Alert,
    alert_of,
    check_aioquic,
    load_ca,
    peer_chain,
    uri_sans,
    verify_server_chain,
)
from sdcp_conformance.transport.h3_server import ALPN_H3
from sdcp_conformance.transport.tls import names_party


class _Stream:
    __slots__ = ("body", "done", "headers", "status")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()
        self.done: asyncio.Future[None] = loop.create_future()


class _ClientProtocol(QuicConnectionProtocol):
    """One client QUIC connection: checks the server's identity at the handshake, then reads HTTP/3 responses."""

    def __init__(self, quic: QuicConnection, *, host: str, anchors: list[x509.Certificate], expected_uri: str | None,
                 max_response_bytes: int) -> None:
        super().__init__(quic)
        loop = asyncio.get_running_loop()
        self.host = host
        self.anchors = anchors
        self.expected_uri = expected_uri
        self.max_response_bytes = max_response_bytes
        self.h3: H3Connection | None = None
        self.peer_uris: tuple[str, ...] = ()
        self.alpn: str | None = None
        self.ready: asyncio.Future[None] = loop.create_future()
        """Resolved when the server's SETTINGS arrived (it accepted us); failed with the connection's failure."""
        self.failure: TransportFailure | None = None
        self.streams: dict[int, _Stream] = {}

    def quic_event_received(self, event: events.QuicEvent) -> None:
        if isinstance(event, events.HandshakeCompleted):
            self._check_server(event)
        elif isinstance(event, events.ConnectionTerminated):
            self._fail(_termination_failure(event))
        elif isinstance(event, events.StreamReset) and event.stream_id in self.streams:
            self._fail_stream(event.stream_id, TransportFailure.at(
                Stage.STREAM_RESET, f"the server reset stream {event.stream_id} (error 0x{event.error_code:x})",
                stream_id=event.stream_id, error_code=f"0x{event.error_code:x}"))
        if self.h3 is not None and not isinstance(event, events.ConnectionTerminated):
            for h3_event in self.h3.handle_event(event):
                self._dispatch(h3_event)
            if self.h3.received_settings is not None and not self.ready.done():
                self.ready.set_result(None)

    def _check_server(self, event: events.HandshakeCompleted) -> None:
        chain = peer_chain(self._quic)
        self.alpn = event.alpn_protocol
        self.peer_uris = uri_sans(chain[0]) if chain else ()
        refusal = verify_server_chain(chain, self.anchors, self.host)
        if refusal is not None:
            self._refuse(refusal.alert, TransportFailure.at(Stage.TLS_CERTIFICATE, refusal.detail,
                                                            certificate_error=refusal.detail))
        elif event.alpn_protocol != ALPN_H3:
            self._refuse(Alert.NO_APPLICATION_PROTOCOL, TransportFailure.at(
                Stage.ALPN, f"the server selected ALPN {event.alpn_protocol!r}, not h3", alpn=event.alpn_protocol))
        elif self.expected_uri is not None and not names_party(self.peer_uris, self.expected_uri):
            self._refuse(Alert.BAD_CERTIFICATE, TransportFailure.at(
                Stage.TLS_CERTIFICATE, f"the server's certificate names {list(self.peer_uris)}, not "
                f"{self.expected_uri} (P1-ID-1)", certificate_error="URI SAN mismatch"))
        else:
            self.h3 = H3Connection(self._quic)

    def _refuse(self, alert: int, failure: TransportFailure) -> None:
        self._quic.close(error_code=0x100 + alert, frame_type=QuicFrameType.CRYPTO, reason_phrase=failure.detail)
        self.transmit()
        self._fail(failure)

    def _fail(self, failure: TransportFailure) -> None:
        if self.failure is None:
            self.failure = failure
        if not self.ready.done():
            self.ready.set_exception(self.failure)
            self.ready.exception()  # retrieved: nobody may be waiting
        for stream_id in list(self.streams):
            self._fail_stream(stream_id, self.failure)

    def _fail_stream(self, stream_id: int, failure: TransportFailure) -> None:
        stream = self.streams.get(stream_id)
        if stream is not None and not stream.done.done():
            stream.done.set_exception(failure)
            stream.done.exception()

    def _dispatch(self, event: H3Event) -> None:
        stream = self.streams.get(getattr(event, "stream_id", -1))
        if stream is None or stream.done.done():
            return
        if isinstance(event, HeadersReceived) and stream.status is None:
            for name, value in event.headers:
                if name == b":status":
                    stream.status = int(value)
                elif not name.startswith(b":"):
                    stream.headers.append((name.decode("latin-1"), value.decode("latin-1")))
        elif isinstance(event, DataReceived):
            if len(stream.body) + len(event.data) > self.max_response_bytes:
                self._quic.stop_stream(event.stream_id, ErrorCode.H3_REQUEST_CANCELLED)
                self.transmit()
                self._fail_stream(event.stream_id, TransportFailure.at(
                    Stage.BODY_OVER_LIMIT, f"the response body exceeds {self.max_response_bytes} bytes",
                    limit=self.max_response_bytes, received=len(stream.body) + len(event.data)))
                return
            stream.body += event.data
        if getattr(event, "stream_ended", False) and not stream.done.done():
            stream.done.set_result(None)


def _termination_failure(event: events.ConnectionTerminated) -> TransportFailure:
    alert = alert_of(event.error_code)
    if alert is not None:
        return TransportFailure.at(Stage.TLS_ALERT, f"the server closed the connection with alert {alert}: "
                                   f"{event.reason_phrase or 'no reason given'}", alert=alert)
    return TransportFailure.at(Stage.CONNECTION_LOST, f"the connection closed (error 0x{event.error_code:x}: "
                               f"{event.reason_phrase or 'no reason given'})", error_code=f"0x{event.error_code:x}")


class H3Client:
    """``async with H3Client(base_uri, cert, key, ca) as c: await c.request("POST", "proposals", body)``."""

    def __init__(self, base_uri: str, cert: Path | None, key: Path | None, ca: Path, *,
                 expected_uri: str | None = None, timeouts: Timeouts | None = None,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        check_aioquic()
        parts = urlsplit(base_uri)
        if parts.scheme != "https" or parts.hostname is None:
            raise InvalidArgument(f"base URI {base_uri!r} needs https and a host")
        self.base_uri = base_uri if base_uri.endswith("/") else base_uri + "/"
        self._host, self._port = parts.hostname, parts.port or 443
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/") + "/"
        self.expected_uri = expected_uri
        self.timeouts = timeouts or Timeouts()
        self.max_response_bytes = max_response_bytes
        # The server's chain and name are verified by verify_server_chain when the handshake completes (before
        # anything is sent): aioquic's own check cannot read SDCP's URI SANs (h3_client_auth). Its CertificateVerify
        # signature check (RFC 8446 §4.4.3) does not depend on verify_mode and stays on.
        self._configuration = QuicConfiguration(is_client=True, alpn_protocols=[ALPN_H3], server_name=self._host,
                                                verify_mode=ssl.CERT_NONE)
        self._anchors = load_ca(ca)
        if cert is not None:
            self._configuration.load_cert_chain(cert, key)
        self._protocol: _ClientProtocol | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self.connections: list[ConnectionInfo] = []

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        protocol, self._protocol = self._protocol, None
        transport, self._transport = self._transport, None
        if protocol is not None:
            with contextlib.suppress(Exception):
                protocol.close()  # CONNECTION_CLOSE is sent at once; nothing is awaited
        if transport is not None:
            transport.close()

    async def connect(self) -> ConnectionInfo:
        """Open the connection (requests otherwise open it on demand); waits for the server's SETTINGS."""
        async with asyncio.timeout(self.timeouts.connect):
            await self._usable()
        return self.connections[-1]

    async def request(self, method: str, path: str, body: bytes | None = None, *,
                      headers: dict[str, str] | None = None, timeout: float | None = None) -> ClientResponse:
        """Send one request (path relative to the base URI) and read the whole response within ``timeout``
        (default :attr:`Timeouts.attempt`); raises :class:`~.failures.TransportFailure`."""
        deadline_s = self.timeouts.attempt if timeout is None else timeout
        stream: _Stream | None = None
        try:
            async with asyncio.timeout(deadline_s):
                protocol = await self._usable()
                assert protocol.h3 is not None
                quic = protocol._quic
                stream_id = quic.get_next_available_stream_id()
                stream = protocol.streams[stream_id] = _Stream(asyncio.get_running_loop())
                payload = body or b""
                protocol.h3.send_headers(stream_id, self._request_headers(method, path, payload, headers),
                                         end_stream=not payload)
                if payload:
                    protocol.h3.send_data(stream_id, payload, end_stream=True)
                protocol.transmit()
                try:
                    await stream.done
                finally:
                    protocol.streams.pop(stream_id, None)
        except TimeoutError:
            if self._protocol is None or not self._protocol.ready.done():
                raise TransportFailure.at(Stage.TLS_STALLED, f"no HTTP/3 connection within {deadline_s:g} s",
                                          deadline_s=deadline_s) from None
            stage = Stage.HEADERS_TIMEOUT if stream is None or stream.status is None else Stage.BODY_STALLED
            raise TransportFailure.at(stage, f"no complete response within {deadline_s:g} s", deadline_s=deadline_s,
                                      received=len(stream.body) if stream else None) from None
        assert stream.status is not None
        return ClientResponse(status=stream.status, headers=tuple(stream.headers), body=bytes(stream.body),
                              connection=self.connections[-1])

    async def _usable(self) -> _ClientProtocol:
        if self._protocol is None or self._protocol.failure is not None:
            await self.aclose()
            await self._open()
        assert self._protocol is not None
        await asyncio.shield(self._protocol.ready)
        return self._protocol

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        family, _, _, _, addr = (await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_DGRAM))[0]
        local = ("::", 0) if family == socket.AF_INET6 else ("0.0.0.0", 0)
        quic = QuicConnection(configuration=self._configuration)

        def factory() -> _ClientProtocol:
            return _ClientProtocol(quic, host=self._host, anchors=self._anchors, expected_uri=self.expected_uri,
                                   max_response_bytes=self.max_response_bytes)

        transport, protocol = await loop.create_datagram_endpoint(factory, local_addr=local)
        self._transport, self._protocol = transport, protocol
        protocol.connect(cast(Any, addr))
        try:
            await asyncio.shield(protocol.ready)
        finally:
            self.connections.append(ConnectionInfo(len(self.connections) + 1, "TLSv1.3" if protocol.alpn else None,
                                                   protocol.alpn, protocol.peer_uris))

    def _request_headers(self, method: str, path: str, body: bytes,
                         headers: dict[str, str] | None) -> list[tuple[bytes, bytes]]:
        target = self._prefix + path.lstrip("/")
        head = [(b":method", method.encode()), (b":scheme", b"https"), (b":authority", self._authority.encode()),
                (b":path", target.encode()), (b"content-length", str(len(body)).encode())]
        head += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()
                 if name.lower() != "content-length"]
        return head


__all__ = ["H3Client"]
