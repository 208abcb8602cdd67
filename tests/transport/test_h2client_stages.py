"""The project's HTTP/2 client against a misbehaving server: each failure names its stage and carries its evidence.

A wrong classification (everything "refused", a timeout called a reset, a
half-received body called "no answer") fails these tests; so does a doubled
prefix or an error code given as a number.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.reference.stack import free_port
from sdcp_conformance.testing.misbehaving import MisbehavingConfig, MisbehavingServer, Mode
from sdcp_conformance.transport.exchange import ClientResponse, Timeouts
from sdcp_conformance.transport.failures import FailureKind, Stage, TransportFailure
from sdcp_conformance.transport.h2client import MAX_CONNECTIONS, MAX_UNPROCESSED_RESENDS, H2Client
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.types import Request, Response

from .conftest import StartServer

DEADLINE_S = 1.0
LIMIT = 1 << 20
QUICK = Timeouts(connect=DEADLINE_S, read=DEADLINE_S, write=DEADLINE_S, total=DEADLINE_S)


@pytest.fixture(scope="module")
def server_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A PKI whose subject is the verifier, so its other-CA certificate can serve as a server's."""
    parties = {"verifier": "https://127.0.0.1:9001/verifier/", "router": "https://127.0.0.1:9003/router/"}
    return init_pki(tmp_path_factory.mktemp("pki"), parties, subject="verifier")


class Inner:
    """Valid-looking answers for the modes that wrap one, counting the requests it processed."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    async def __call__(self, request: Request) -> Response:
        self.seen.append(request.body)
        return Response(200, b"\xa1\x61n" + bytes([len(self.seen) % 24]), [("content-type", SDCP_MEDIA_TYPE)])


def _config(pki: Pki, mode: Mode, inner: Inner | None = None, **options: Any) -> MisbehavingConfig:
    return MisbehavingConfig(mode, pki.cert("verifier"), pki.key("verifier"), pki.ca_cert,
                             other_cert=pki.wrong_ca.cert, other_key=pki.wrong_ca.key, inner=inner or Inner(),
                             drip_interval_s=0.05, late_s=DEADLINE_S * 3, **options)


def _client(pki: Pki, port: int, **options: Any) -> H2Client:
    options.setdefault("max_attempts", 1)
    options.setdefault("max_response_bytes", LIMIT)
    return H2Client(f"https://127.0.0.1:{port}/verifier/", pki.cert("router"), pki.key("router"), pki.ca_cert,
                    timeouts=QUICK, **options)


async def _fail(pki: Pki, mode: Mode) -> TransportFailure:
    async with MisbehavingServer(_config(pki, mode)) as server, _client(pki, server.port) as client:
        with pytest.raises(TransportFailure) as caught:
            await client.request("POST", "sessions", b"\xa0", timeout=DEADLINE_S)
        return caught.value


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=30))


# mode → (stage, evidence members it must carry, with their values where they are known)
EXPECTED: dict[Mode, tuple[Stage, dict[str, Any]]] = {
    Mode.HANG: (Stage.HEADERS_TIMEOUT, {"deadline_s": DEADLINE_S}),
    Mode.LATE_HEADERS: (Stage.HEADERS_TIMEOUT, {"deadline_s": DEADLINE_S}),
    Mode.STALLED_HANDSHAKE: (Stage.TLS_STALLED, {"deadline_s": DEADLINE_S}),
    Mode.DRIP_BODY: (Stage.BODY_STALLED, {"status": 200, "content_length": 1000, "deadline_s": DEADLINE_S}),
    Mode.STREAM_RESET: (Stage.STREAM_RESET, {"error_code": "INTERNAL_ERROR"}),
    Mode.REFUSED_STREAMS: (Stage.STREAM_RESET, {}),
    Mode.GOAWAY_ERROR: (Stage.GOAWAY, {"error_code": "INTERNAL_ERROR", "last_stream_id": 1}),
    Mode.GOAWAY_AT_ONCE: (Stage.GOAWAY, {}),
    Mode.CLOSE_AFTER_HANDSHAKE: (Stage.H2_PREFACE, {"tls_version": "TLSv1.3", "alpn": "h2"}),
    Mode.HUGE_BODY: (Stage.BODY_OVER_LIMIT, {"status": 200, "content_length": 2 << 30, "received": 0,
                                             "limit": LIMIT}),
    Mode.HUGE_BODY_UNDECLARED: (Stage.BODY_OVER_LIMIT, {"status": 200, "limit": LIMIT}),
    Mode.TLS12_ONLY: (Stage.TLS_ALERT, {"alert": "protocol_version"}),
    Mode.HTTP11_ONLY: (Stage.ALPN, {"tls_version": "TLSv1.3", "alpn": None}),
    Mode.TRUNCATED_BODY: (Stage.BODY_TRUNCATED, {"status": 200, "content_length": 4, "received": 2}),
    Mode.OTHER_CA: (Stage.TLS_CERTIFICATE, {"certificate_error": "unable to get local issuer certificate"}),
    Mode.ZERO_WINDOW: (Stage.UPLOAD_STALLED, {"deadline_s": DEADLINE_S}),
    Mode.NO_STREAMS: (Stage.HEADERS_TIMEOUT, {"deadline_s": DEADLINE_S}),
    Mode.BAD_STATUS: (Stage.H2_PROTOCOL, {"stream_id": 1}),
    Mode.PUSH_PROMISE: (Stage.H2_PROTOCOL, {}),
}


@pytest.mark.parametrize("mode", list(EXPECTED), ids=lambda mode: mode.value)
def test_failure_names_its_stage_and_carries_the_evidence(server_pki: Pki, mode: Mode) -> None:
    failure = run(_fail(server_pki, mode))
    stage, members = EXPECTED[mode]
    assert failure.stage is stage, failure.describe()
    assert failure.kind is stage.kind or stage is Stage.TLS_STALLED
    observed = failure.evidence.items()
    for name, value in members.items():
        assert observed.get(name) == value, (name, observed)
    words = failure.describe()
    assert words.startswith(stage.label + ": ")
    assert str(failure).count(stage.value) == 1 and "timeout: timeout" not in str(failure)


def test_connection_ended_without_goaway_is_lost_with_the_unknown_said(server_pki: Pki) -> None:
    """A served request, then one whose connection the server ends with no GOAWAY: connection-lost, saying that
    nobody knows whether it was processed (RFC 9113 §6.8), on the stream that was open."""
    inner = Inner()

    async def go() -> TransportFailure:
        async with MisbehavingServer(_config(server_pki, Mode.VALID_THEN_CLOSE, inner, valid_requests=1)) as server, \
                _client(server_pki, server.port) as client:
            assert (await client.request("POST", "sessions", b"\xa0", timeout=DEADLINE_S)).status == 200
            with pytest.raises(TransportFailure) as caught:
                await client.request("POST", "sessions", b"\xa0", timeout=DEADLINE_S)
            return caught.value

    failure = run(go())
    assert failure.stage is Stage.CONNECTION_LOST, failure.describe()
    assert failure.evidence.stream_id == 3
    assert "without a GOAWAY" in str(failure) and "RFC 9113 §6.8" in str(failure)
    assert len(inner.seen) == 1


def test_drip_fed_body_reports_the_bytes_that_did_arrive(server_pki: Pki) -> None:
    failure = run(_fail(server_pki, Mode.DRIP_BODY))
    assert 0 < failure.evidence.received < 1000


def test_over_limit_body_is_cut_at_the_limit_not_read_on(server_pki: Pki) -> None:
    failure = run(_fail(server_pki, Mode.HUGE_BODY_UNDECLARED))
    assert failure.kind is FailureKind.TOO_LARGE
    assert LIMIT < failure.evidence.received < LIMIT + (1 << 20)  # stopped within about a window of the limit


def test_closed_port_is_tcp_refused(server_pki: Pki) -> None:
    async def go() -> TransportFailure:
        async with _client(server_pki, free_port()) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "sessions/x/output", timeout=DEADLINE_S)
            return caught.value

    failure = run(go())
    assert failure.stage is Stage.TCP_REFUSED and failure.kind is FailureKind.REFUSED


@pytest.mark.parametrize(("identity", "alert"), [("none", "certificate_required"), ("wrong-ca", "unknown_ca")])
def test_refused_client_certificate_is_the_servers_alert_by_name(pki: Pki, start_server: StartServer,
                                                                 identity: str, alert: str) -> None:
    server = start_server()
    pair: tuple[Path | None, Path | None] = (None, None) if identity == "none" else (pki.wrong_ca.cert,
                                                                                     pki.wrong_ca.key)

    async def go() -> TransportFailure:
        async with H2Client(server.base_uri, *pair, pki.ca_cert, timeouts=QUICK) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.connect()
            return caught.value

    failure = run(go())
    assert failure.stage is Stage.TLS_ALERT and failure.evidence.alert == alert
    assert failure.kind is FailureKind.REFUSED


def test_every_connection_records_tls_version_and_alpn(pki: Pki, start_server: StartServer) -> None:
    server = start_server()

    async def go() -> tuple[ClientResponse, list[Any]]:
        async with H2Client(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert) as client:
            response = await client.request("GET", "x")
            return response, client.connections

    response, connections = run(go())
    assert response.connection is not None
    assert (response.connection.tls_version, response.connection.alpn) == ("TLSv1.3", "h2")
    assert [(c.number, c.tls_version, c.alpn) for c in connections] == [(1, "TLSv1.3", "h2")]


# ----------------------------------------------------------------------------- graceful GOAWAY


@pytest.fixture
def graceful(server_pki: Pki) -> Iterator[tuple[MisbehavingConfig, Inner]]:
    inner = Inner()
    yield _config(server_pki, Mode.GRACEFUL_GOAWAY, inner, goaway_every=3), inner


def test_graceful_goaway_answers_owed_streams_and_resends_unprocessed_ones(
        server_pki: Pki, graceful: tuple[MisbehavingConfig, Inner]) -> None:
    """GOAWAY(NO_ERROR, last_stream_id=5) arrives before the answers to streams 1, 3, 5, with 7…19 already sent.

    Streams ≤ 5 must complete on the old connection; the others were never processed, so they are resent on
    a fresh connection although POST sessions is not retry-safe (RFC 9113 §8.7) — and processed exactly once.
    """
    config, inner = graceful

    async def go() -> tuple[list[ClientResponse], int, int]:
        async with MisbehavingServer(config) as server, _client(server_pki, server.port) as client:
            await client.connect()
            bodies = [bytes([0xA1, 0x61, 0x69, i]) for i in range(10)]
            answers = await asyncio.gather(*(client.request("POST", "sessions", b, timeout=10) for b in bodies))
            return list(answers), client.connections_opened, server.stats.goaways

    answers, connections, goaways = run(go())
    assert all(answer.status == 200 for answer in answers)
    assert sorted(inner.seen) == sorted(bytes([0xA1, 0x61, 0x69, i]) for i in range(10))  # each processed once
    assert [answer.connection.number for answer in answers[:3] if answer.connection] == [1, 1, 1]
    assert goaways >= 2 and connections >= 3  # 10 requests, a GOAWAY after every 3rd stream of a connection


def test_graceful_goaway_is_followed_by_the_sdcp_client_too(server_pki: Pki,
                                                            graceful: tuple[MisbehavingConfig, Inner]) -> None:
    """SdcpClient runs on H2Client: the reference roles get the same behaviour."""
    from sdcp_conformance.transport.client import SdcpClient

    config, inner = graceful

    async def go() -> list[int]:
        async with MisbehavingServer(config) as server:
            client = SdcpClient(f"https://127.0.0.1:{server.port}/verifier/", server_pki.cert("router"),
                                server_pki.key("router"), server_pki.ca_cert, max_attempts=1)
            async with client:
                answers = await asyncio.gather(*(client.send_message("POST", "sessions", {"i": i}) for i in range(7)))
            return [answer.status for answer in answers]

    assert run(go()) == [200] * 7
    assert len(inner.seen) == 7


def test_error_goaway_fails_the_streams_it_names(server_pki: Pki) -> None:
    failure = run(_fail(server_pki, Mode.GOAWAY_ERROR))
    assert failure.kind is FailureKind.CONNECTION_LOST and failure.attempts == 1
    assert "GOAWAY(INTERNAL_ERROR, last_stream_id=1)" in failure.detail


def test_a_server_refusing_every_stream_is_not_asked_forever(server_pki: Pki) -> None:
    """REFUSED_STREAM on everything, nothing served: resent, and the cap stands (D-H2C-2)."""
    async def go() -> tuple[TransportFailure, int]:
        async with MisbehavingServer(_config(server_pki, Mode.REFUSED_STREAMS)) as server, \
                _client(server_pki, server.port) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("POST", "sessions", b"\xa0", timeout=10)
            return caught.value, client.connections_opened

    failure, connections = run(go())
    assert f"tried {MAX_UNPROCESSED_RESENDS + 1} times on {connections} connection(s), never processed" \
        in failure.detail
    assert "refused the stream unprocessed" in failure.detail and failure.stage is Stage.STREAM_RESET


@pytest.mark.parametrize("mode", [Mode.GRACEFUL_GOAWAY, Mode.SHUTDOWN_NOTICE], ids=lambda mode: mode.value)
def test_a_server_shedding_connections_while_it_serves_loses_no_request(server_pki: Pki, mode: Mode) -> None:
    """GOAWAY(NO_ERROR) after every 2nd stream, 24 requests in flight: a connection serves two and turns the rest
    away, so the last request is refused about eleven times. The server serves all along, so every refused request
    is resent (D-H2C-2: the cap is for a server that serves nothing) and each is processed once."""
    inner = Inner()
    bodies = [bytes([0xA1, 0x61, 0x69, i]) for i in range(24)]

    async def go() -> tuple[list[ClientResponse], int, int]:
        async with MisbehavingServer(_config(server_pki, mode, inner, goaway_every=2)) as server, \
                _client(server_pki, server.port) as client:
            await client.connect()
            answers = await asyncio.gather(*(client.request("POST", "sessions", b, timeout=10) for b in bodies))
            return list(answers), client.connections_opened, server.stats.goaways

    answers, connections, goaways = run(go())
    assert [answer.status for answer in answers] == [200] * len(bodies)
    assert sorted(inner.seen) == sorted(bodies)
    assert goaways >= 1
    if mode is Mode.GRACEFUL_GOAWAY:  # the two-step shutdown names every stream already sent
        assert connections > MAX_UNPROCESSED_RESENDS + 1


def test_a_server_closing_each_idle_connection_is_followed(server_pki: Pki) -> None:
    """GOAWAY(NO_ERROR) and close whenever no stream is open: every request after the first burst goes on a new
    connection, none is lost or sent twice."""
    inner = Inner()

    async def go() -> tuple[list[int], int]:
        async with MisbehavingServer(_config(server_pki, Mode.CLOSE_WHEN_IDLE, inner)) as server, \
                _client(server_pki, server.port) as client:
            statuses = []
            for burst in range(4):
                answers = await asyncio.gather(*(client.request("POST", "sessions", bytes([0xA1, 0x61, 0x69, i]),
                                                                timeout=10) for i in range(burst * 3, burst * 3 + 3)))
                statuses += [answer.status for answer in answers]
            return statuses, client.connections_opened

    statuses, connections = run(go())
    assert statuses == [200] * 12 and len(inner.seen) == 12
    assert connections >= 4


def test_the_servers_stream_limit_is_kept_on_each_connection(pki: Pki, start_server: StartServer) -> None:
    """A server allowing 2 concurrent streams per connection, 20 concurrent requests: the server refuses a stream
    beyond its limit, so every answer shows it was kept; the rest go on further connections (D-H2C-5), at most
    MAX_CONNECTIONS of them."""
    release = asyncio.Event()
    inside = 0
    most = 0

    async def handler(request: Request) -> Response:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        if inside >= 4:
            release.set()
        await asyncio.wait_for(release.wait(), 10)
        inside -= 1
        return Response(200, request.path.encode())

    server = start_server(handler, max_concurrent_streams=2)

    async def go() -> tuple[list[bytes], int]:
        async with H2Client(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert) as client:
            answers = await asyncio.gather(*(client.request("GET", f"n/{i}") for i in range(20)))
            return [answer.body for answer in answers], client.connections_opened

    bodies, connections = run(go())
    assert bodies == [f"/n/{i}".encode() for i in range(20)]
    assert 2 < most <= 2 * MAX_CONNECTIONS and 1 < connections <= MAX_CONNECTIONS


def _held_until_overtaken(timeout_s: float) -> Callable[[Request], Awaitable[Response]]:
    """A handler holding ``hold`` until ``overtake`` arrives (at most ``timeout_s``; then 504)."""
    overtaken = asyncio.Event()

    async def handler(request: Request) -> Response:
        if request.path.endswith("overtake"):
            overtaken.set()
            return Response(200, b"overtook")
        try:
            await asyncio.wait_for(overtaken.wait(), timeout_s)
        except TimeoutError:
            return Response(504, b"never overtaken")
        return Response(200, b"released")

    return handler


def test_a_request_overtakes_a_held_one_when_the_server_allows_one_stream(pki: Pki,
                                                                          start_server: StartServer) -> None:
    """SETTINGS_MAX_CONCURRENT_STREAMS 1 and the first request held until a second arrives: the second goes on
    a second connection (D-H2C-5), as a different proposal must overtake a round in flight (§6.3)."""
    server = start_server(_held_until_overtaken(5.0), max_concurrent_streams=1)

    async def go() -> tuple[list[bytes], int]:
        async with H2Client(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert) as client:
            held = asyncio.ensure_future(client.request("GET", "hold"))
            await asyncio.sleep(0.2)  # not synchronisation: the order is fixed either way, this only lets it start
            overtake = await client.request("GET", "overtake")
            return [(await held).body, overtake.body], client.connections_opened

    assert run(go()) == ([b"released", b"overtook"], 2)


def test_a_server_refusing_a_second_connection_gets_its_requests_in_turn(pki: Pki,
                                                                          start_server: StartServer) -> None:
    """One stream and one connection per client: the extra connection is turned away (ENHANCE_YOUR_CALM) before
    it serves, so no more are asked for and the requests wait for the one stream — all answered."""
    async def handler(request: Request) -> Response:
        return Response(200, request.path.encode())

    server = start_server(handler, max_concurrent_streams=1, max_connections_per_identity=1)

    async def go() -> list[bytes]:
        async with H2Client(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert) as client:
            answers = await asyncio.gather(*(client.request("GET", f"n/{i}") for i in range(8)))
            return [answer.body for answer in answers]

    assert run(go()) == [f"/n/{i}".encode() for i in range(8)]
