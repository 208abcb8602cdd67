"""A deliberately misbehaving HTTP/3 server: one :class:`Mode` per way a QUIC/HTTP/3 peer breaks.

The HTTP/3 counterpart of :mod:`.misbehaving` (which is HTTP/2 over TCP), for
checking that :class:`~sdcp_conformance.transport.h3_client.H3Client` names
the stage (:class:`~sdcp_conformance.transport.failures.Stage`) at which each
misbehaviour breaks an exchange. It is the project's
:class:`~sdcp_conformance.transport.h3_server.H3Server` (its UDP endpoint,
connection routing, request parsing, handler call and ``stop()``) with, per
mode, a different server connection: one ``_authenticate`` or ``_send``
replaced, or the connection's sending and reading switched off.

What each mode does on the wire:

* :attr:`Mode.NO_CLIENT_CERT`: no CertificateRequest in the handshake and no
  check of a client certificate; serves the handler (§5.1 requires mutual
  certificate authentication, so a harness must judge it FAILED).
* :attr:`Mode.HANDSHAKE_STALL`: reads the client's Initial packets and sends
  nothing back, ever.
* :attr:`Mode.STREAM_RESET`: RESET_STREAM(:data:`RESET_ERROR_CODE`) on every
  request stream, no response headers.
* :attr:`Mode.CLOSE_MID_RESPONSE`: the response headers (``content-length``
  N), the first N // 2 body bytes, then CONNECTION_CLOSE with the application
  error :data:`CLOSE_ERROR_CODE`.
* :attr:`Mode.LONGER_THAN_DECLARED`: ``content-length`` N, then N +
  ``len(SURPLUS)`` body bytes, then the end of the stream, each in its own
  datagrams (RFC 9114 §4.1.2: a malformed response).
* :attr:`Mode.IDLE_SILENCE`: completes the handshake, then sends nothing at
  all (no HANDSHAKE_DONE, no ACK, no control stream, so no SETTINGS, and no
  response) and reads nothing.

``async with MisbehavingH3Server(mode, config) as server: server.port`` (or
``start()`` / ``stop()``); ``config.port`` 0 picks a free UDP port. ``stop()``
never waits for a peer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, cast

from aioquic.h3.connection import ErrorCode, H3Connection
from aioquic.quic import events

from sdcp_conformance.transport.h3_client_auth import MutualTlsQuicConnection, identity_of, peer_chain
from sdcp_conformance.transport.h3_server import ALPN_H3, H3Server, H3ServerConnection
from sdcp_conformance.transport.server import ServerConfig
from sdcp_conformance.transport.types import Handler, Request, Response


class Mode(enum.Enum):
    """How the server misbehaves."""

    NO_CLIENT_CERT = "no-client-cert"
    """Never asks for a client certificate; serves anyone (§5.1 requires mutual certificate authentication)."""
    HANDSHAKE_STALL = "handshake-stall"
    """Reads the client's Initial packets and never answers: the QUIC handshake stalls."""
    STREAM_RESET = "stream-reset"
    """RESET_STREAM(:data:`RESET_ERROR_CODE`) on every request stream."""
    CLOSE_MID_RESPONSE = "close-mid-response"
    """The response headers and half the declared body, then CONNECTION_CLOSE(:data:`CLOSE_ERROR_CODE`)."""
    LONGER_THAN_DECLARED = "longer-than-declared"
    """``content-length`` N, then N + ``len(SURPLUS)`` body bytes (RFC 9114 §4.1.2: malformed)."""
    IDLE_SILENCE = "idle-silence"
    """Completes the handshake, then never sends anything (not even SETTINGS) and never answers."""


RESET_ERROR_CODE = ErrorCode.H3_REQUEST_CANCELLED
"""The RESET_STREAM error code of :attr:`Mode.STREAM_RESET` (RFC 9114 §8.1)."""
CLOSE_ERROR_CODE = ErrorCode.H3_INTERNAL_ERROR
"""The CONNECTION_CLOSE (application) error code of :attr:`Mode.CLOSE_MID_RESPONSE` (RFC 9114 §8.1)."""
SURPLUS = b"+surplus"
"""What :attr:`Mode.LONGER_THAN_DECLARED` sends after the declared body."""
ANSWER_BODY = b"sdcp-h3-misbehaving-answer|" * 40
"""The default handler's body (1080 bytes)."""


async def answer(request: Request) -> Response:
    """The default handler: 200 with :data:`ANSWER_BODY`."""
    return Response(200, ANSWER_BODY, [("content-type", "application/octet-stream")])


def sent_before_close(body: bytes) -> bytes:
    """The part of a response body :attr:`Mode.CLOSE_MID_RESPONSE` sends before it closes the connection."""
    return body[: len(body) // 2]


@dataclass
class MisbehavingH3Stats:
    """What the misbehaving connections did (updated on the server's event loop)."""

    datagrams_ignored: int = 0
    """Datagrams read and dropped (:attr:`Mode.HANDSHAKE_STALL`, :attr:`Mode.IDLE_SILENCE` after the handshake)."""
    handshakes_completed: int = 0
    """Handshakes the server completed and accepted (every mode but :attr:`Mode.HANDSHAKE_STALL`)."""
    served: int = 0
    streams_reset: int = 0
    closed_mid_response: int = 0
    over_declared: int = 0


class _NoCertificateRequest(MutualTlsQuicConnection):
    """A server QUIC connection that does not send CertificateRequest: aioquic's default, which
    :class:`MutualTlsQuicConnection` exists to change (its version check still runs)."""

    def _initialize(self, peer_cid: bytes) -> None:
        super()._initialize(peer_cid)
        self.tls._request_client_certificate = False


class _MisbehavingConnection(H3ServerConnection):
    """:class:`H3ServerConnection` with a handle on the misbehaving server's counters."""

    def __init__(self, quic: MutualTlsQuicConnection, server: MisbehavingH3Server) -> None:
        super().__init__(quic, server)
        self.observed = server.observed

    def _authenticate(self, event: events.HandshakeCompleted) -> None:
        super()._authenticate(event)
        if self._h3 is not None:
            self.observed.handshakes_completed += 1

    @staticmethod
    def _head(response: Response, declared: int) -> list[tuple[bytes, bytes]]:
        head = [(b":status", str(response.status).encode()), (b"content-length", str(declared).encode())]
        return head + [(name.lower().encode(), value.encode()) for name, value in response.headers
                       if name.lower() != "content-length"]


class _NoClientCertConnection(_MisbehavingConnection):
    def _authenticate(self, event: events.HandshakeCompleted) -> None:
        if event.alpn_protocol != ALPN_H3:
            super()._authenticate(event)  # refused for its ALPN, as H3Server does
            return
        self._identity = identity_of(peer_chain(self._quic))  # none: no certificate was asked for
        self._h3 = H3Connection(self._quic)
        self._server.stats.connections += 1
        self.observed.handshakes_completed += 1

    def _send(self, stream_id: int, response: Response) -> None:
        super()._send(stream_id, response)
        self.observed.served += 1


class _SilentConnection(_MisbehavingConnection):
    """Reads datagrams and drops them; sends nothing (``transmit`` does nothing, so no timer is armed either)."""

    silent = True

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        if self.silent:
            self.observed.datagrams_ignored += 1
            return
        super().datagram_received(data, addr)

    def transmit(self) -> None:
        if not self.silent:
            super().transmit()


class _HandshakeStallConnection(_SilentConnection):
    pass


class _IdleSilenceConnection(_SilentConnection):
    """Completes the handshake (the client's Finished is processed), then goes silent before anything of the
    server's 1-RTT data (HANDSHAKE_DONE, ACKs, the control stream) is sent: aioquic handles a datagram's events
    before it transmits."""

    silent = False

    def _authenticate(self, event: events.HandshakeCompleted) -> None:
        self.silent = True
        self.observed.handshakes_completed += 1


class _StreamResetConnection(_MisbehavingConnection):
    def _send(self, stream_id: int, response: Response) -> None:
        self._quic.reset_stream(stream_id, RESET_ERROR_CODE)
        self.observed.streams_reset += 1


class _CloseMidResponseConnection(_MisbehavingConnection):
    def _send(self, stream_id: int, response: Response) -> None:
        assert self._h3 is not None
        self._h3.send_headers(stream_id, self._head(response, len(response.body)))
        self._h3.send_data(stream_id, sent_before_close(response.body), end_stream=False)
        self.transmit()  # the headers and the partial body go out first; a pending close would be sent alone
        self._quic.close(error_code=CLOSE_ERROR_CODE, reason_phrase="closing in the middle of a response")
        self.observed.closed_mid_response += 1


class _LongerThanDeclaredConnection(_MisbehavingConnection):
    def _send(self, stream_id: int, response: Response) -> None:
        """The headers, the body and the stream's end each in their own datagrams, so that a client reads the status
        and content-length, then more DATA than declared, before the stream ends (where aioquic 1.7.2's own check
        of the length would fire)."""
        assert self._h3 is not None
        self._h3.send_headers(stream_id, self._head(response, len(response.body)))
        self.transmit()
        self._h3.send_data(stream_id, response.body + SURPLUS, end_stream=False)
        self.transmit()
        self._h3.send_data(stream_id, b"", end_stream=True)
        self.observed.over_declared += 1


_CONNECTIONS: dict[Mode, type[_MisbehavingConnection]] = {
    Mode.NO_CLIENT_CERT: _NoClientCertConnection,
    Mode.HANDSHAKE_STALL: _HandshakeStallConnection,
    Mode.STREAM_RESET: _StreamResetConnection,
    Mode.CLOSE_MID_RESPONSE: _CloseMidResponseConnection,
    Mode.LONGER_THAN_DECLARED: _LongerThanDeclaredConnection,
    Mode.IDLE_SILENCE: _IdleSilenceConnection,
}
assert set(_CONNECTIONS) == set(Mode)


class MisbehavingH3Server(H3Server):
    """``async with MisbehavingH3Server(Mode.STREAM_RESET, config) as server: …`` (or ``start()``/``stop()``).

    ``config`` is the :class:`~.server.ServerConfig` an :class:`H3Server` takes (certificate, CA, host, port 0 for
    a free one, limits); ``handler`` answers the modes that answer (default :func:`answer`).
    """

    def __init__(self, mode: Mode, config: ServerConfig, handler: Handler = answer) -> None:
        super().__init__(handler, config)
        self.mode = mode
        self.observed = MisbehavingH3Stats()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def open(self, original_cid: bytes, endpoint: Any) -> H3ServerConnection:
        """As :meth:`H3Server.open`, with the mode's QUIC and server connections."""
        quic_class = _NoCertificateRequest if self.mode is Mode.NO_CLIENT_CERT else MutualTlsQuicConnection
        quic = quic_class(configuration=self.quic_configuration, original_destination_connection_id=original_cid)
        connection = _CONNECTIONS[self.mode](quic, self)
        connection.connection_made(cast(Any, endpoint.transport))
        self.route(original_cid, connection)
        self.route(quic.host_cid, connection)
        return connection


__all__ = [
    "ANSWER_BODY",
    "CLOSE_ERROR_CODE",
    "RESET_ERROR_CODE",
    "SURPLUS",
    "MisbehavingH3Server",
    "MisbehavingH3Stats",
    "Mode",
    "answer",
    "sent_before_close",
]
