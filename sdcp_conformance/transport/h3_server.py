"""An asyncio HTTP/3 server (QUIC, UDP) with required client certificates, serving the same :data:`Handler`.

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual
certificate authentication is REQUIRED." QUIC is TLS 1.3 by construction (RFC
9001); this server offers ALPN ``h3`` only, asks every client for a
certificate and refuses the handshake (a QUIC CRYPTO_ERROR carrying the TLS
alert) of a client that presents none, one of another CA or an expired one
(:mod:`.h3_client_auth`). The handler sees the client's URI SAN as
``Request.peer_identity``, built by the HTTP/2 server's own
:func:`~.server_connection.make_request` (P1-ID-1).

From :class:`~.limits.ServerLimits` it enforces ``max_body`` (a declared or
received body over it is answered 413 at once and the rest of the request
refused with STOP_SENDING(H3_NO_ERROR), RFC 9114 §4.1), ``body_timeout_s``
(408), ``idle_timeout_s`` (QUIC's idle timeout) and the flow-control windows
(``initial_window``, ``connection_window``). What is not yet here (rate
limits, server-wide budgets, faults other than a stream reset) is listed in
H3_NOTES.md.

The UDP endpoint is ours, not aioquic's ``serve()``: aioquic's server would
build its own connections, and ours must be :class:`~.h3_client_auth.MutualTlsQuicConnection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, cast

from aioquic.buffer import Buffer  # type: ignore[attr-defined]  # re-exported from its C module
from aioquic.h3.connection import H3_ALPN, ErrorCode, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic import events
from aioquic.quic.configuration import SMALLEST_MAX_DATAGRAM_SIZE, QuicConfiguration
from aioquic.quic.packet import QuicFrameType, QuicPacketType, encode_quic_version_negotiation, pull_quic_header

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.h3_client_auth import (
    Alert,
    MutualTlsQuicConnection,
    Refusal,
    check_aioquic,
    delay_application_acks,
    identity_of,
    load_ca,
    peer_chain,
    verify_client_chain,
)
from sdcp_conformance.transport.h3_protocol import CoalescingProtocol
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.problem import call_handler, status_problem_response
from sdcp_conformance.transport.server import RefusedConnection, ServerConfig, ServerStats
from sdcp_conformance.transport.server_connection import content_length, make_request
from sdcp_conformance.transport.types import Handler, Request, Response, TransportFault

log = logging.getLogger(__name__)

ALPN_H3 = "h3"
REFUSALS_KEPT = 64


@dataclass
class H3ServerStats(ServerStats):
    """The HTTP/2 server's counters (those that apply), and the QUIC handshakes refused."""

    handshakes_refused: int = 0
    refused: list[RefusedConnection] = field(default_factory=list)


class _Inbound:
    __slots__ = ("body", "headers", "timer")

    def __init__(self, headers: list[tuple[bytes, bytes]], timer: asyncio.TimerHandle) -> None:
        self.headers = headers
        self.body = bytearray()
        self.timer = timer


class H3ServerConnection(CoalescingProtocol):
    """One QUIC connection: client authentication at handshake completion, then HTTP/3 request streams."""

    def __init__(self, quic: MutualTlsQuicConnection, server: H3Server) -> None:
        super().__init__(quic)
        self._server = server
        self._h3: H3Connection | None = None
        self._identity: str | None = None
        self._inbound: dict[int, _Inbound] = {}
        self._refused_streams: set[int] = set()
        self._tasks: dict[int, asyncio.Task[None]] = {}

    # -- QUIC events --------------------------------------------------------------------

    def quic_event_received(self, event: events.QuicEvent) -> None:
        if isinstance(event, events.ConnectionIdIssued):
            self._server.route(event.connection_id, self)
        elif isinstance(event, events.ConnectionIdRetired):
            self._server.unroute(event.connection_id)
        elif isinstance(event, events.ConnectionTerminated):
            self.terminated()
        elif isinstance(event, events.HandshakeCompleted):
            self._authenticate(event)
        elif self._h3 is not None:
            if isinstance(event, events.StreamReset | events.StopSendingReceived):
                self._abandoned(event.stream_id)  # and HTTP/3 forgets the stream too (handle_event below)
            for h3_event in self._h3.handle_event(event):
                self._dispatch(h3_event)

    def _authenticate(self, event: events.HandshakeCompleted) -> None:
        """Refuse the handshake unless ALPN is h3 and the client certificate verifies; else start HTTP/3.

        Runs before anything of the connection's application data is processed or any of ours is sent (aioquic
        queues its events and transmits after they are handled), so a refused client is never served."""
        chain = peer_chain(self._quic)
        refusal: Refusal | None
        if event.alpn_protocol != ALPN_H3:
            refusal = Refusal(Alert.NO_APPLICATION_PROTOCOL, f"the client negotiated ALPN {event.alpn_protocol!r}, "
                              "not h3 (§5.1: HTTP/3 is RFC 9114, ALPN h3)")
        else:
            refusal = verify_client_chain(chain, self._server.anchors)
        if refusal is not None:
            self._server.refuse("tls-handshake", refusal.detail, identity_of(chain))
            self._quic.close(error_code=refusal.error_code, frame_type=QuicFrameType.CRYPTO,
                             reason_phrase=refusal.detail)
            return
        self._identity = identity_of(chain)
        self._h3 = H3Connection(self._quic)
        delay_application_acks(self._quic)
        self._server.stats.connections += 1

    def terminated(self) -> None:
        self._server.forget(self)
        for task in self._tasks.values():
            task.cancel()
        for inbound in self._inbound.values():
            inbound.timer.cancel()
        self._inbound.clear()

    def _abandoned(self, stream_id: int) -> None:
        """The client reset its request stream or asked us to stop sending (a request it gave up on, RFC 9114
        §4.1.1): its handler is cancelled, as the HTTP/2 server cancels one on RST_STREAM, and nothing is sent."""
        inbound = self._inbound.pop(stream_id, None)
        if inbound is not None:
            inbound.timer.cancel()
        task = self._tasks.pop(stream_id, None)
        if task is not None:
            task.cancel()

    # -- HTTP/3 events ------------------------------------------------------------------

    def _dispatch(self, event: H3Event) -> None:
        if isinstance(event, HeadersReceived):
            self._on_headers(event)
        elif isinstance(event, DataReceived):
            self._on_data(event)

    def _on_headers(self, event: HeadersReceived) -> None:
        stream_id, max_body = event.stream_id, self._server.limits.max_body
        if stream_id in self._inbound or stream_id in self._refused_streams:
            return  # trailers (or headers after a refusal): nothing SDCP uses
        declared = content_length(event.headers)
        if declared is not None and declared > max_body:
            self._refuse(stream_id, 413, f"declared body of {declared} bytes; the limit is {max_body}")
            return
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self._server.limits.body_timeout_s, self._body_timed_out, stream_id)
        self._inbound[stream_id] = _Inbound(list(event.headers), timer)
        if event.stream_ended:
            self._on_end(stream_id)

    def _on_data(self, event: DataReceived) -> None:
        inbound = self._inbound.get(event.stream_id)
        if inbound is None:
            return
        max_body = self._server.limits.max_body
        if len(inbound.body) + len(event.data) > max_body:
            self._refuse(event.stream_id, 413, f"body exceeds {max_body} bytes; the limit is {max_body}")
            return
        inbound.body += event.data
        if event.stream_ended:
            self._on_end(event.stream_id)

    def _on_end(self, stream_id: int) -> None:
        inbound = self._inbound.pop(stream_id)
        inbound.timer.cancel()
        request = make_request(inbound.headers, bytes(inbound.body), self._identity)
        self._server.stats.requests += 1
        self._tasks[stream_id] = asyncio.ensure_future(self._respond(stream_id, request))

    def _body_timed_out(self, stream_id: int) -> None:
        if stream_id in self._inbound:
            self._server.stats.bodies_timed_out += 1
            limit = self._server.limits.body_timeout_s
            self._refuse(stream_id, 408, f"the request body was not complete within {limit:g} s")

    def _refuse(self, stream_id: int, status: int, why: str) -> None:
        """Answer at once and stop reading the request (RFC 9114 §4.1: "When the server does not need to receive
        the remainder of the request, it MAY abort reading the request stream, send a complete response, and
        cleanly close the sending part of the stream. The error code H3_NO_ERROR SHOULD be used")."""
        if status == 413:
            self._server.stats.bodies_refused += 1
        inbound = self._inbound.pop(stream_id, None)
        if inbound is not None:
            inbound.timer.cancel()
        self._refused_streams.add(stream_id)
        self._send(stream_id, status_problem_response(status, why))
        with contextlib.suppress(Exception):  # the stream may be gone already
            self._quic.stop_stream(stream_id, ErrorCode.H3_NO_ERROR)
        self.transmit()

    # -- responding ---------------------------------------------------------------------

    async def _respond(self, stream_id: int, request: Request) -> None:
        try:
            response = await call_handler(self._server.handler, request, self._server.stats.count_handler_error)
            if response.fault is not None:
                self._commit_fault(stream_id, response.fault)
            else:
                self._send(stream_id, response)
        except Exception:  # one response must not end the connection
            log.exception("sending the HTTP/3 response on stream %d failed", stream_id)
            with contextlib.suppress(Exception):
                self._quic.reset_stream(stream_id, ErrorCode.H3_INTERNAL_ERROR)
        finally:
            self._tasks.pop(stream_id, None)
            self.transmit_soon()

    def _send(self, stream_id: int, response: Response) -> None:
        assert self._h3 is not None
        headers = [(b":status", str(response.status).encode()), (b"content-length", str(len(response.body)).encode())]
        headers += [(name.lower().encode(), value.encode()) for name, value in response.headers
                    if name.lower() != "content-length"]
        self._h3.send_headers(stream_id, headers, end_stream=not response.body)
        if response.body:
            self._h3.send_data(stream_id, response.body, end_stream=True)

    def _commit_fault(self, stream_id: int, fault: TransportFault) -> None:
        if fault is TransportFault.RESET_STREAM:
            self._quic.reset_stream(stream_id, ErrorCode.H3_INTERNAL_ERROR)
        else:  # GOAWAY and an abrupt close are both, for now, the connection closed without an answer
            self._quic.close(error_code=ErrorCode.H3_NO_ERROR, reason_phrase=fault.value)


class _Endpoint(asyncio.DatagramProtocol):
    """The UDP socket: routes each datagram to its connection by destination connection ID; opens a connection
    for a new client's Initial (RFC 9000 §14.1: only in a datagram of at least 1200 bytes)."""

    def __init__(self, server: H3Server) -> None:
        self._server = server
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        configuration = self._server.quic_configuration
        try:
            header = pull_quic_header(Buffer(data=data), host_cid_length=configuration.connection_id_length)
        except ValueError:
            return
        connection = self._server.connection_for(header.destination_cid)
        if connection is None:
            if header.packet_type != QuicPacketType.INITIAL or len(data) < SMALLEST_MAX_DATAGRAM_SIZE:
                return
            if header.version not in configuration.supported_versions:
                assert self.transport is not None
                self.transport.sendto(encode_quic_version_negotiation(
                    source_cid=header.destination_cid, destination_cid=header.source_cid,
                    supported_versions=configuration.supported_versions), addr)
                return
            connection = self._server.open(header.destination_cid, self)
        connection.datagram_received(data, addr)


class H3Server:
    """Serves one :data:`Handler` over HTTP/3 on UDP; ``start()``, ``port``, ``stop()`` as :class:`~.server.H2Server`
    does."""

    def __init__(self, handler: Handler, config: ServerConfig) -> None:
        check_aioquic()
        if not config.require_client_cert:
            raise InvalidArgument("the HTTP/3 server always requires a client certificate (§5.1)")
        self.handler = handler
        self.config = config
        self.limits: ServerLimits = config.limits
        self.stats = H3ServerStats()
        self.anchors = load_ca(config.ca)
        self.quic_configuration = _server_configuration(config)
        self._endpoint: _Endpoint | None = None
        self._routes: dict[bytes, H3ServerConnection] = {}

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        _, endpoint = await loop.create_datagram_endpoint(lambda: _Endpoint(self),
                                                          local_addr=(self.config.host, self.config.port))
        self._endpoint = endpoint

    async def stop(self) -> None:
        """Close every connection (CONNECTION_CLOSE H3_NO_ERROR, sent at once) and the socket; never waits."""
        endpoint, self._endpoint = self._endpoint, None
        if endpoint is None:
            return
        for connection in set(self._routes.values()):
            connection.close(error_code=ErrorCode.H3_NO_ERROR, reason_phrase="server stopping")
            connection.terminated()
        self._routes.clear()
        if endpoint.transport is not None:
            endpoint.transport.close()

    @property
    def port(self) -> int:
        if self._endpoint is None or self._endpoint.transport is None:
            raise InvalidArgument("the server is not started")
        return int(self._endpoint.transport.get_extra_info("sockname")[1])

    @property
    def base_uri(self) -> str:
        host = self.config.host
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self.port}/"

    # -- what connections share -------------------------------------------------------

    def open(self, original_cid: bytes, endpoint: _Endpoint) -> H3ServerConnection:
        quic = MutualTlsQuicConnection(configuration=self.quic_configuration,
                                       original_destination_connection_id=original_cid)
        connection = H3ServerConnection(quic, self)
        connection.connection_made(cast(asyncio.BaseTransport, endpoint.transport))
        self._routes[original_cid] = connection
        self._routes[quic.host_cid] = connection
        return connection

    def connection_for(self, cid: bytes) -> H3ServerConnection | None:
        return self._routes.get(cid)

    def route(self, cid: bytes, connection: H3ServerConnection) -> None:
        self._routes[cid] = connection

    def unroute(self, cid: bytes) -> None:
        self._routes.pop(cid, None)

    def forget(self, connection: H3ServerConnection) -> None:
        for cid in [cid for cid, held in self._routes.items() if held is connection]:
            del self._routes[cid]

    def refused_since(self, since: float) -> list[RefusedConnection]:
        """The clients refused since ``since`` (``time.monotonic()``), as :meth:`.server.H2Server.refused_since`."""
        return [refusal for refusal in self.stats.refused if refusal.at >= since]

    def refuse(self, stage: str, detail: str, identity: str | None = None) -> None:
        self.stats.handshakes_refused += 1
        refused = self.stats.refused
        refused.append(RefusedConnection(time.monotonic(), stage, detail, identity))
        del refused[:-REFUSALS_KEPT]


def _server_configuration(config: ServerConfig) -> QuicConfiguration:
    limits = config.limits
    configuration = QuicConfiguration(
        is_client=False,
        alpn_protocols=[ALPN_H3],
        idle_timeout=limits.idle_timeout_s,
        max_stream_data=limits.initial_window,
        max_data=limits.connection_window,
    )
    configuration.load_cert_chain(config.cert, config.key)
    return configuration


assert ALPN_H3 in H3_ALPN

__all__ = ["ALPN_H3", "H3Server", "H3ServerConnection", "H3ServerStats"]
