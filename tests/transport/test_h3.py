"""The HTTP/3 transport foundation: H3Server's mutual TLS against aioquic's own client, and H3Client against it."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration

from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.failures import Stage, TransportFailure
from sdcp_conformance.transport.h3_client import H3Client
from sdcp_conformance.transport.h3_client_auth import CRYPTO_ERROR, Alert
from sdcp_conformance.transport.h3_server import H3Server
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.server import ServerConfig
from sdcp_conformance.transport.types import Handler, Request, Response

from .conftest import PARTIES, SHORT

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
STEP_S = 10.0
"""Every await in these tests is bounded by this (asyncio.wait_for)."""


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), timeout=30))


class Recorder:
    """A handler that remembers what reached it and answers with the identity it saw."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        if request.header("content-type") == SDCP_MEDIA_TYPE:
            echoed = codec.encode({"echo": codec.decode(request.body), "peer": request.peer_identity})
            return Response(200, echoed, [("content-type", SDCP_MEDIA_TYPE)])
        return Response(200, (request.peer_identity or "<none>").encode(), [("content-type", "text/plain")])


async def serving(pki: Pki, handler: Handler, body: Callable[[H3Server], Awaitable[T]], **limits: Any) -> T:
    """Start an H3Server as the verifier on a free port, run ``body`` against it, stop it whatever happens."""
    config = ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert, limits=ServerLimits(**limits),
                          label="verifier")
    server = H3Server(handler, config)
    await asyncio.wait_for(server.start(), STEP_S)
    try:
        return await body(server)
    finally:
        await asyncio.wait_for(server.stop(), STEP_S)


# -- aioquic's own client: the third-party counterpart ------------------------------------------


class ThirdParty(QuicConnectionProtocol):
    """aioquic's client protocol with its own H3Connection: collects responses and the connection's end."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        loop = asyncio.get_running_loop()
        self.terminated: asyncio.Future[events.ConnectionTerminated] = loop.create_future()
        self.responses: dict[int, asyncio.Future[tuple[int, dict[str, str], bytes]]] = {}
        self._partial: dict[int, tuple[int, dict[str, str], bytearray]] = {}

    def quic_event_received(self, event: events.QuicEvent) -> None:
        if isinstance(event, events.ConnectionTerminated) and not self.terminated.done():
            self.terminated.set_result(event)
        for h3_event in self.h3.handle_event(event):
            stream_id = getattr(h3_event, "stream_id", None)
            if stream_id not in self.responses:
                continue
            if isinstance(h3_event, HeadersReceived):
                head = {name.decode(): value.decode() for name, value in h3_event.headers}
                self._partial[stream_id] = (int(head.pop(":status")), head, bytearray())
            elif isinstance(h3_event, DataReceived) and stream_id in self._partial:
                self._partial[stream_id][2].extend(h3_event.data)
            if getattr(h3_event, "stream_ended", False) and stream_id in self._partial:
                status, head, body = self._partial.pop(stream_id)
                self.responses[stream_id].set_result((status, head, bytes(body)))

    def send(self, path: str, body: bytes, *, declare_length: bool = True) -> asyncio.Future[Any]:
        stream_id = self._quic.get_next_available_stream_id()
        headers = [(b":method", b"POST"), (b":scheme", b"https"), (b":authority", b"127.0.0.1"),
                   (b":path", path.encode())]
        if declare_length:
            headers.append((b"content-length", str(len(body)).encode()))
        future = self.responses[stream_id] = asyncio.get_running_loop().create_future()
        self.h3.send_headers(stream_id, headers, end_stream=not body)
        if body:
            self.h3.send_data(stream_id, body, end_stream=True)
        self.transmit()
        return future


def third_party_configuration(pki: Pki, pair: tuple[Path | None, Path | None], alpn: str = "h3"
                              ) -> QuicConfiguration:
    # aioquic's own server check cannot parse SDCP's URI SANs (a port in the URI: h3_client_auth); this
    # counterpart is here to test the server, so it does not verify it (our client does, test (f)).
    configuration = QuicConfiguration(is_client=True, alpn_protocols=[alpn], server_name="127.0.0.1",
                                      verify_mode=ssl.CERT_NONE)
    cert, key = pair
    if cert is not None:
        configuration.load_cert_chain(cert, key)
    return configuration


async def third_party_exchange(server: H3Server, configuration: QuicConfiguration, body: bytes = b"hello",
                               *, declare_length: bool = True) -> tuple[int, dict[str, str], bytes]:
    connecting = connect("127.0.0.1", server.port, configuration=configuration, create_protocol=ThirdParty)
    async with asyncio.timeout(STEP_S), connecting as client:
        assert isinstance(client, ThirdParty)
        answer = client.send("/verifier/proposals", body, declare_length=declare_length)
        return await asyncio.wait_for(answer, STEP_S)


async def third_party_refusal(server: H3Server, configuration: QuicConfiguration) -> events.ConnectionTerminated:
    """Connect with aioquic's client, send a request, and return how the server ended the connection."""
    # aioquic's client sees its own handshake complete when it sends Finished (RFC 9001 §4.1.1); the server's
    # refusal (a CONNECTION_CLOSE carrying the alert) comes after, so the request sent meanwhile must go unserved.
    # A refusal during the handshake itself (ALPN) fails connect(); the protocol still saw how it ended.
    made: list[ThirdParty] = []

    def create(*args: Any, **kwargs: Any) -> ThirdParty:
        made.append(ThirdParty(*args, **kwargs))
        return made[-1]

    async with asyncio.timeout(STEP_S):
        try:
            async with connect("127.0.0.1", server.port, configuration=configuration, create_protocol=create) as client:
                assert isinstance(client, ThirdParty)
                client.send("/verifier/proposals", b"must not be served")
                return await client.terminated
        except ConnectionError:
            return await made[-1].terminated


def drafter(pki: Pki) -> tuple[Path, Path]:
    return pki.cert("drafter-1"), pki.key("drafter-1")


# -- (a) .. (e), (g): the server against aioquic's client ---------------------------------------


def test_authenticated_request_is_served_with_uri_san(pki: Pki) -> None:
    handler = Recorder()

    async def go(server: H3Server) -> tuple[int, dict[str, str], bytes]:
        return await third_party_exchange(server, third_party_configuration(pki, drafter(pki)))

    status, headers, body = run(lambda: serving(pki, handler, go))
    assert (status, body.decode()) == (200, PARTIES["drafter-1"])
    assert headers["content-type"] == "text/plain"
    assert [r.peer_identity for r in handler.requests] == [PARTIES["drafter-1"]]
    assert (handler.requests[0].method, handler.requests[0].path) == ("POST", "/verifier/proposals")


@pytest.mark.parametrize(("case", "alert"), [
    ("no-certificate", Alert.CERTIFICATE_REQUIRED),
    ("wrong-ca", Alert.UNKNOWN_CA),
    ("expired", Alert.CERTIFICATE_EXPIRED),
])
def test_refused_client_certificate_ends_the_handshake(pki: Pki, case: str, alert: int) -> None:
    handler = Recorder()
    pair: tuple[Path | None, Path | None] = {
        "no-certificate": (None, None),
        "wrong-ca": (pki.wrong_ca.cert, pki.wrong_ca.key),
        "expired": (pki.expired.cert, pki.expired.key),
    }[case]
    servers: list[H3Server] = []

    async def go(server: H3Server) -> events.ConnectionTerminated:
        servers.append(server)
        return await third_party_refusal(server, third_party_configuration(pki, pair))

    ended = run(lambda: serving(pki, handler, go))
    assert ended.error_code == CRYPTO_ERROR + alert, ended
    assert handler.requests == []
    assert servers[0].stats.handshakes_refused == 1
    assert servers[0].stats.refused[0].stage == "tls-handshake"


def test_alpn_other_than_h3_is_refused(pki: Pki) -> None:
    handler = Recorder()

    async def go(server: H3Server) -> events.ConnectionTerminated:
        return await third_party_refusal(server, third_party_configuration(pki, drafter(pki), alpn="h2"))

    ended = run(lambda: serving(pki, handler, go))
    assert ended.error_code == CRYPTO_ERROR + Alert.NO_APPLICATION_PROTOCOL, ended
    assert handler.requests == []


@pytest.mark.parametrize("declare_length", [True, False], ids=["declared", "streamed"])
def test_body_over_the_limit_is_answered_413(pki: Pki, declare_length: bool) -> None:
    handler = Recorder()

    async def go(server: H3Server) -> tuple[int, dict[str, str], bytes]:
        return await third_party_exchange(server, third_party_configuration(pki, drafter(pki)), b"x" * 4096,
                                          declare_length=declare_length)

    status, headers, body = run(lambda: serving(pki, handler, go, max_body=1024))
    assert status == 413
    assert headers["content-type"] == "application/problem+json"
    assert b"1024" in body
    assert handler.requests == []


# -- (f): our client against our server ---------------------------------------------------------


def h3_client(pki: Pki, server: H3Server, pair: tuple[Path | None, Path | None] | None = None,
              expected_uri: str | None = PARTIES["verifier"]) -> H3Client:
    cert, key = pair or drafter(pki)
    return H3Client(server.base_uri + "verifier/", cert, key, pki.ca_cert, expected_uri=expected_uri,
                    timeouts=SHORT)


def test_our_client_round_trips_sdcp_cbor_and_checks_the_server_uri_san(pki: Pki) -> None:
    handler = Recorder()
    message = {"round": 1, "tokens": [1, 2, 3]}

    async def go(server: H3Server) -> Any:
        async with h3_client(pki, server) as client:
            info = await asyncio.wait_for(client.connect(), STEP_S)
            headers = {"content-type": SDCP_MEDIA_TYPE, "accept": SDCP_MEDIA_TYPE}
            first = await client.request("POST", "sessions/s1/proposals", codec.encode(message), headers=headers,
                                         timeout=STEP_S)
            second = await client.request("GET", "sessions/s1/output?from=3", timeout=STEP_S)
            return info, first, second, len(client.connections)

    info, first, second, connections = run(lambda: serving(pki, handler, go))
    assert info.alpn == "h3" and info.peer_uris == (PARTIES["verifier"],)
    assert first.ok and first.message() == {"echo": message, "peer": PARTIES["drafter-1"]}
    assert first.connection == info
    assert second.status == 200 and second.body.decode() == PARTIES["drafter-1"]
    assert (handler.requests[1].path, handler.requests[1].query) == ("/verifier/sessions/s1/output", "from=3")
    assert connections == 1


def test_our_client_refuses_a_server_naming_another_party(pki: Pki) -> None:
    async def go(server: H3Server) -> TransportFailure:
        async with h3_client(pki, server, expected_uri=PARTIES["router"]) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "x", timeout=STEP_S)
            return caught.value

    failure = run(lambda: serving(pki, Recorder(), go))
    assert failure.stage is Stage.TLS_CERTIFICATE
    assert PARTIES["verifier"] in failure.detail


def test_our_client_reports_the_servers_alert(pki: Pki) -> None:
    async def go(server: H3Server) -> TransportFailure:
        async with h3_client(pki, server, pair=(pki.wrong_ca.cert, pki.wrong_ca.key)) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "x", timeout=STEP_S)
            return caught.value

    failure = run(lambda: serving(pki, Recorder(), go))
    assert failure.stage is Stage.TLS_ALERT
    assert failure.evidence.alert == "unknown_ca"


def test_our_client_times_out_on_a_silent_handler(pki: Pki) -> None:
    release = asyncio.Event()

    class Silent(Recorder):
        async def __call__(self, request: Request) -> Response:
            await release.wait()
            return Response(204)

    async def go(server: H3Server) -> TransportFailure:
        try:
            async with h3_client(pki, server) as client:
                await client.connect()
                with pytest.raises(TransportFailure) as caught:
                    await client.request("GET", "x", timeout=0.5)
                return caught.value
        finally:
            release.set()

    failure = run(lambda: serving(pki, Silent(), go))
    assert failure.stage is Stage.HEADERS_TIMEOUT


def test_stop_without_start_and_twice_returns(pki: Pki) -> None:
    config = ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert)

    async def go() -> int:
        server = H3Server(Recorder(), config)
        await server.stop()
        await server.start()
        port = server.port
        await server.stop()
        await server.stop()
        return port

    assert run(go) > 0
