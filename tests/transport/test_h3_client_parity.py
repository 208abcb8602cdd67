"""H3Client as a drop-in for H2Client: its interface, retries, deadlines, limits and cancellation, against H3Server.

Each test pins one thing a caller of H2Client relies on, so that a harness choosing HTTP/3 for a target gets the
same behaviour: the request signature and constructor keywords, a retry-safe request resent after the server
closed the connection (and an unsafe one not), the caller's ``extension`` moving the deadline, a body over
``max_response_bytes`` failing as H2Client's does, a request given up on resetting its stream at the server, an
opening given up on leaving no UDP socket, and the HTTP/3 SETTINGS that never come named as such.

Synchronisation is by events only (the handler's, the server connection's); every await is bounded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from aioquic.h3.connection import ErrorCode
from aioquic.quic import events

from sdcp_conformance.transport.exchange import MAX_ATTEMPTS, MAX_RESPONSE_BYTES, Timeouts
from sdcp_conformance.transport.failures import FailureKind, Stage, TransportFailure
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.h3_client import H3Client
from sdcp_conformance.transport.h3_server import H3Server, H3ServerConnection
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.types import Request, Response, TransportFault

from .conftest import PARTIES, SHORT, StartServer
from .test_h3 import serving

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
STEP_S = 10.0
"""Every await in these tests that has no shorter deadline of its own is bounded by this."""
WHOLE_S = 30.0
CANCELLED = ErrorCode.H3_REQUEST_CANCELLED
HandlerFn = Callable[[Request], Awaitable[Response]]


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), timeout=WHOLE_S))


def h3_client(pki: Pki, base_uri: str, **options: Any) -> H3Client:
    options.setdefault("timeouts", SHORT)
    return H3Client(base_uri + "verifier/", pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert,
                    expected_uri=PARTIES["verifier"], **options)


async def answered(request: Request) -> Response:
    return Response(200, b"answered", [("content-type", "text/plain")])


@dataclasses.dataclass(frozen=True)
class Seen:
    """A stream event one of the server's QUIC connections received."""

    kind: str
    stream_id: int
    error_code: int
    handling: bool
    """Whether a handler was running for that stream when it came."""


class ServerStreams:
    """What the server's connections see of the client's streams: resets, STOP_SENDING, request bytes."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.received: dict[int, int] = {}
        self.changed = asyncio.Event()

    def observe(self, connection: H3ServerConnection, event: events.QuicEvent) -> None:
        if isinstance(event, events.StreamReset | events.StopSendingReceived):
            handling = event.stream_id in getattr(connection, "_tasks", {})
            self.seen.append(Seen(type(event).__name__, event.stream_id, event.error_code, handling))
            self.changed.set()
        elif isinstance(event, events.StreamDataReceived) and event.stream_id % 4 == 0:  # a request stream
            self.received[event.stream_id] = self.received.get(event.stream_id, 0) + len(event.data)
            self.changed.set()

    async def until(self, found: Callable[[], T | None]) -> T:
        async with asyncio.timeout(STEP_S):
            while (result := found()) is None:
                self.changed.clear()
                await self.changed.wait()
            return result

    async def event(self, kind: str) -> Seen:
        return await self.until(lambda: next((seen for seen in self.seen if seen.kind == kind), None))


@pytest.fixture
def server_streams(monkeypatch: pytest.MonkeyPatch) -> ServerStreams:
    streams = ServerStreams()
    original = H3ServerConnection.quic_event_received

    def observing(connection: H3ServerConnection, event: events.QuicEvent) -> None:
        streams.observe(connection, event)
        original(connection, event)

    monkeypatch.setattr(H3ServerConnection, "quic_event_received", observing)
    return streams


# -- the interface --------------------------------------------------------------------------------


def test_request_and_constructor_take_what_h2client_takes(pki: Pki) -> None:
    def shape(function: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]

    assert shape(H3Client.request) == shape(H2Client.request)
    h2_init, h3_init = shape(H2Client.__init__), shape(H3Client.__init__)
    assert h3_init[:len(h2_init)] == h2_init
    assert [(name, default) for name, kind, default in h3_init[len(h2_init):]] == [("expected_uri", None)]

    async def go() -> dict[str, Any]:
        async with H3Client("https://127.0.0.1:9/verifier", None, None, pki.ca_cert) as client:
            return {name: getattr(client, name) for name in ("base_uri", "timeouts", "max_attempts",
                                                             "max_response_bytes", "connections",
                                                             "connections_opened")}

    assert run(go) == {"base_uri": "https://127.0.0.1:9/verifier/", "timeouts": Timeouts(),
                       "max_attempts": MAX_ATTEMPTS, "max_response_bytes": MAX_RESPONSE_BYTES, "connections": [],
                       "connections_opened": 0}
    assert H3Client("https://h/", None, None, pki.ca_cert, max_attempts=5, max_response_bytes=7).max_attempts == 5


# -- retries ---------------------------------------------------------------------------------------


class Closing:
    """Closes the connection (CONNECTION_CLOSE, no answer) for the first ``closes`` requests, then answers."""

    def __init__(self, closes: int) -> None:
        self.closes = closes
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        if len(self.requests) <= self.closes:
            return Response(200, fault=TransportFault.CLOSE_CONNECTION)
        return await answered(request)


@pytest.mark.parametrize(("method", "path", "retry"), [
    ("GET", "sessions/s1/output?from=0", None),
    ("POST", "sessions/s1/proposals", None),
    ("POST", "sessions", True),
])
def test_a_retry_safe_request_is_resent_on_a_fresh_connection_after_a_close(
        pki: Pki, method: str, path: str, retry: bool | None) -> None:
    handler = Closing(closes=1)

    async def go(server: H3Server) -> tuple[Any, ...]:
        async with h3_client(pki, server.base_uri) as client:
            response = await client.request(method, path, b"\xa0", retry=retry, timeout=STEP_S)
            return response, client.connections_opened, list(client.connections)

    response, opened, connections = run(lambda: serving(pki, handler, go))
    assert (response.status, response.body, response.attempts) == (200, b"answered", 2)
    assert len(handler.requests) == 2
    assert opened == 2 and [info.number for info in connections] == [1, 2]
    assert response.connection == connections[1]


@pytest.mark.parametrize(("method", "path", "retry"), [
    ("POST", "sessions", None),
    ("PUT", "sessions/s1/drafter", None),
    ("GET", "sessions/s1/output", False),
])
def test_an_unsafe_request_is_not_resent(pki: Pki, method: str, path: str, retry: bool | None) -> None:
    handler = Closing(closes=1)

    async def go(server: H3Server) -> tuple[TransportFailure, int]:
        async with h3_client(pki, server.base_uri) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request(method, path, b"\xa0", retry=retry, timeout=STEP_S)
            return caught.value, client.connections_opened

    failure, opened = run(lambda: serving(pki, handler, go))
    assert failure.attempts == 1 and len(handler.requests) == 1 and opened == 1
    assert failure.stage is Stage.CONNECTION_LOST and failure.kind is FailureKind.CONNECTION_LOST
    assert failure.evidence.error_code == "H3_NO_ERROR", failure.evidence


def test_max_attempts_bounds_the_resends(pki: Pki) -> None:
    handler = Closing(closes=10)

    async def go(server: H3Server) -> tuple[TransportFailure, int]:
        async with h3_client(pki, server.base_uri, max_attempts=4) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "sessions/s1/output", timeout=STEP_S)
            return caught.value, client.connections_opened

    failure, opened = run(lambda: serving(pki, handler, go))
    assert failure.attempts == 4 and len(handler.requests) == 4 and opened == 4


# -- deadlines -------------------------------------------------------------------------------------

DEADLINE_S = 0.3


@pytest.mark.parametrize(("grants", "outcome"), [
    ((2.0,), "answered"),  # granted when the deadline comes; the server answers then
    ((0.0,), 0.3),  # nothing granted: it expires at its deadline
    ((0.2, 0.2), 0.5),  # 0.2 s granted once; the second look grants nothing more: it expires 0.2 s later
], ids=["granted-and-answered", "none-granted", "granted-once"])
def test_the_extension_moves_the_deadline_when_it_comes(pki: Pki, grants: tuple[float, ...],
                                                        outcome: str | float) -> None:
    """The handler answers only once the deadline has come (the extension is asked): with time granted the answer
    is read; without, the attempt expires, its deadline moved by what was granted in all."""
    release = asyncio.Event()
    calls: list[float] = []

    async def late(request: Request) -> Response:
        await asyncio.wait_for(release.wait(), STEP_S)
        return await answered(request)

    def extension(started: float) -> float:
        calls.append(started)
        if outcome == "answered":
            release.set()  # the server answers now, after the original deadline
        return grants[min(len(calls), len(grants)) - 1]

    async def go(server: H3Server) -> tuple[Any, float]:
        async with h3_client(pki, server.base_uri, max_attempts=1) as client:
            await asyncio.wait_for(client.connect(), STEP_S)
            began = asyncio.get_running_loop().time()
            try:
                return await client.request("POST", "sessions", b"\xa0", timeout=DEADLINE_S,
                                            extension=extension), began
            except TransportFailure as failure:
                return failure, began
            finally:
                release.set()

    result, began = run(lambda: serving(pki, late, go))
    assert calls and all(began <= started for started in calls)
    if outcome == "answered":
        assert not isinstance(result, TransportFailure), result
        assert result.status == 200 and len(calls) == 1
    else:
        assert isinstance(result, TransportFailure)
        assert result.stage is Stage.HEADERS_TIMEOUT, result.describe()
        assert result.evidence.deadline_s == pytest.approx(outcome)
        assert len(calls) == len(grants)


# -- bounded reads ---------------------------------------------------------------------------------

LIMIT = 1024


async def large(request: Request) -> Response:
    return Response(200, b"x" * (4 * LIMIT), [("content-type", "application/octet-stream")])


def test_a_declared_body_over_the_limit_fails_as_h2client_fails_it(pki: Pki, start_server: StartServer,
                                                                    server_streams: ServerStreams) -> None:
    calls: list[Request] = []

    async def counted(request: Request) -> Response:
        calls.append(request)
        return await large(request)

    async def over_h3(server: H3Server) -> tuple[TransportFailure, Seen]:
        async with h3_client(pki, server.base_uri, max_response_bytes=LIMIT) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "sessions/s1/output", timeout=STEP_S)
            return caught.value, await server_streams.event("StopSendingReceived")

    h2_server = start_server(large)

    async def over_h2() -> TransportFailure:
        async with H2Client(h2_server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert,
                            timeouts=SHORT, max_response_bytes=LIMIT) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "sessions/s1/output", timeout=STEP_S)
            return caught.value

    h3, stopped = run(lambda: serving(pki, counted, over_h3))
    h2 = run(over_h2)
    assert h3.stage is h2.stage is Stage.BODY_OVER_LIMIT
    assert h3.kind is h2.kind is FailureKind.TOO_LARGE
    assert h3.attempts == h2.attempts == 1 and len(calls) == 1  # final: a GET is not resent
    assert h3.detail == h2.detail, (h3.detail, h2.detail)
    h3_evidence, h2_evidence = h3.evidence.items(), h2.evidence.items()
    assert h3_evidence.pop("stream_id") == stopped.stream_id and h2_evidence.pop("stream_id") == 1
    assert h3_evidence == h2_evidence == {"status": 200, "content_length": 4 * LIMIT, "received": 0, "limit": LIMIT}
    assert stopped.error_code == CANCELLED  # the body is not read on


def test_an_undeclared_body_is_cut_where_it_passes_the_limit(pki: Pki, server_streams: ServerStreams,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    body = b"y" * (64 * LIMIT)

    def send_without_length(connection: H3ServerConnection, stream_id: int, response: Response) -> None:
        h3 = connection._h3
        assert h3 is not None
        h3.send_headers(stream_id, [(b":status", b"200")], end_stream=False)
        for offset in range(0, len(body), LIMIT // 2):
            h3.send_data(stream_id, body[offset:offset + LIMIT // 2], end_stream=False)
        h3.send_data(stream_id, b"", end_stream=True)

    monkeypatch.setattr(H3ServerConnection, "_send", send_without_length)

    async def go(server: H3Server) -> tuple[TransportFailure, Seen]:
        async with h3_client(pki, server.base_uri, max_response_bytes=LIMIT) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "sessions/s1/output", timeout=STEP_S)
            return caught.value, await server_streams.event("StopSendingReceived")

    failure, stopped = run(lambda: serving(pki, answered, go))
    assert failure.stage is Stage.BODY_OVER_LIMIT and failure.attempts == 1
    evidence = failure.evidence
    assert (evidence.status, evidence.content_length, evidence.limit) == (200, None, LIMIT)
    assert evidence.received is not None and LIMIT < evidence.received < len(body) // 2, evidence
    assert (stopped.stream_id, stopped.error_code) == (evidence.stream_id, CANCELLED)


# -- cancellation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["caller-cancels", "deadline-expires"])
def test_a_request_given_up_on_resets_its_stream_at_the_server(pki: Pki, server_streams: ServerStreams,
                                                               how: str) -> None:
    """The handler is running when the request is given up on; the server's connection sees STOP_SENDING with
    H3_REQUEST_CANCELLED on that handler's stream, the client keeps no state for it, and the connection serves on."""
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(request: Request) -> Response:
        entered.set()
        await asyncio.wait_for(release.wait(), STEP_S)
        return await answered(request)

    async def go(server: H3Server) -> tuple[Any, ...]:
        try:
            async with h3_client(pki, server.base_uri) as client:
                await asyncio.wait_for(client.connect(), STEP_S)
                if how == "caller-cancels":
                    task = asyncio.create_task(client.request("GET", "sessions/s1/output", timeout=STEP_S))
                    await asyncio.wait_for(entered.wait(), STEP_S)
                    task.cancel()
                    await asyncio.wait({task}, timeout=STEP_S)
                    assert task.cancelled()
                else:
                    with pytest.raises(TransportFailure) as caught:
                        await client.request("POST", "sessions", b"\xa0", timeout=DEADLINE_S)
                    assert caught.value.stage is Stage.HEADERS_TIMEOUT and caught.value.attempts == 1
                    assert entered.is_set()
                stopped = await server_streams.event("StopSendingReceived")
                connection = client._connection
                assert connection is not None
                left = dict(connection.streams)
                release.set()
                after = await client.request("GET", "x", timeout=STEP_S)
                return stopped, left, dict(connection.streams), after, client.connections_opened
        finally:
            release.set()

    stopped, left, left_after_answer, after, opened = run(lambda: serving(pki, held, go))
    assert stopped.error_code == CANCELLED and stopped.handling, stopped
    assert left == {} and left_after_answer == {}
    assert after.status == 200 and opened == 1


def test_a_cancelled_upload_is_reset_before_its_body_is_sent(pki: Pki, server_streams: ServerStreams) -> None:
    body = b"z" * (8 << 20)

    async def go(server: H3Server) -> tuple[Seen, int]:
        async with h3_client(pki, server.base_uri) as client:
            await asyncio.wait_for(client.connect(), STEP_S)
            task = asyncio.create_task(client.request("POST", "sessions", body, timeout=STEP_S))
            stream_id = await server_streams.until(lambda: next(iter(server_streams.received), None))
            task.cancel()
            await asyncio.wait({task}, timeout=STEP_S)
            assert task.cancelled()
            reset = await server_streams.event("StreamReset")
            assert reset.stream_id == stream_id
            return reset, server_streams.received[stream_id]

    reset, received = run(lambda: serving(pki, answered, go, max_body=len(body)))
    assert reset.error_code == CANCELLED
    assert received < len(body)


class Silent(asyncio.DatagramProtocol):
    """A UDP port that reads and never answers: a QUIC handshake towards it stalls."""

    def __init__(self) -> None:
        self.heard = asyncio.Event()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.heard.set()


def test_a_cancelled_opening_leaves_no_udp_socket_open(pki: Pki) -> None:
    async def go() -> tuple[list[asyncio.BaseTransport], H3Client]:
        loop = asyncio.get_running_loop()
        silent_transport, silent = await loop.create_datagram_endpoint(Silent, local_addr=("127.0.0.1", 0))
        made: list[asyncio.BaseTransport] = []
        create = loop.create_datagram_endpoint

        async def recording(*args: Any, **kwargs: Any) -> Any:
            transport, protocol = await create(*args, **kwargs)
            made.append(transport)
            return transport, protocol

        loop.create_datagram_endpoint = recording  # type: ignore[method-assign]
        try:
            port = silent_transport.get_extra_info("sockname")[1]
            client = h3_client(pki, f"https://127.0.0.1:{port}/")
            task = asyncio.create_task(client.request("GET", "sessions/s1/output", timeout=STEP_S))
            await asyncio.wait_for(silent.heard.wait(), STEP_S)  # its Initial went out: the opening is under way
            task.cancel()
            await asyncio.wait({task}, timeout=STEP_S)
            assert task.cancelled()
            return made, client
        finally:
            del loop.create_datagram_endpoint
            silent_transport.close()

    made, client = run(go)
    assert len(made) == 1 and made[0].is_closing()
    assert client._connection is None and client._opening is None and client.connections_opened == 0


# -- HTTP/3 SETTINGS that never come -------------------------------------------------------------


def test_settings_that_never_come_after_the_handshake_are_named_h3_settings(pki: Pki,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The server completes the QUIC handshake and never starts HTTP/3 (no control stream, no SETTINGS)."""
    monkeypatch.setattr(H3ServerConnection, "_authenticate", lambda connection, event: None)
    quick = dataclasses.replace(SHORT, connect=DEADLINE_S)

    async def go(server: H3Server) -> tuple[TransportFailure, TransportFailure, list[Any]]:
        async with h3_client(pki, server.base_uri, timeouts=quick) as client:
            with pytest.raises(TransportFailure) as on_connect:
                await client.connect()
        async with h3_client(pki, server.base_uri) as client:  # the connect deadline is longer than the attempt's
            with pytest.raises(TransportFailure) as on_request:
                await client.request("POST", "sessions", b"\xa0", timeout=DEADLINE_S)
            return on_connect.value, on_request.value, list(client.connections)

    on_connect, on_request, connections = run(lambda: serving(pki, answered, go))
    for failure in (on_connect, on_request):
        assert failure.stage is Stage.H3_SETTINGS, failure.describe()
        assert failure.kind is FailureKind.TIMEOUT
        assert failure.describe().startswith(Stage.H3_SETTINGS.label + ": ")
        assert "SETTINGS" in failure.detail and "QUIC handshake completed" in failure.detail
        assert (failure.evidence.tls_version, failure.evidence.alpn) == ("TLSv1.3", "h3")
        assert failure.evidence.deadline_s == DEADLINE_S
    assert [(info.tls_version, info.alpn) for info in connections] == [("TLSv1.3", "h3")]


def test_h3_settings_is_its_own_stage_and_http2_keeps_its_names() -> None:
    assert Stage.H3_SETTINGS.value == "h3-settings" and "HTTP/3" in Stage.H3_SETTINGS.label
    assert Stage.H2_PREFACE.value == "h2-preface" and Stage.H2_PREFACE.label == "HTTP/2 preface/SETTINGS"
