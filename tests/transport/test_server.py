"""The HTTP/2 + TLS 1.3 + mTLS server on loopback with real TLS (§5.1, P1-TLS-1, P1-ID-1)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading

import httpx
import pytest

from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.problems import PROBLEM_MEDIA_TYPE, ProblemType
from sdcp_conformance.testing.raw_h2 import RawH2
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.types import Request, Response, TransportFault

from .conftest import PARTIES, REFUSED_CERTIFICATES, StartServer, handshake_material
from .tls_probe import PREFACE, SETTINGS_FRAME_TYPE, client_context, first_frame_type, probe

TIMEOUT = httpx.Timeout(10.0)


def _client(pki: Pki, name: str = "drafter-1") -> httpx.Client:
    ctx = client_context(pki.ca_cert, pki.cert(name), pki.key(name))
    return httpx.Client(http1=False, http2=True, verify=ctx, timeout=TIMEOUT)


# ----------------------------------------------------------------------------- handshake


def test_valid_client_certificate_is_accepted_with_h2_settings(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    ctx = client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"), alpn=["h2"])
    outcome, data = probe(server.port, ctx)
    assert outcome == "answered"
    assert first_frame_type(data) == SETTINGS_FRAME_TYPE


@pytest.mark.parametrize("case", [*REFUSED_CERTIFICATES, "tls-1.2-only"])
def test_handshake_is_refused(pki: Pki, start_server: StartServer, case: str) -> None:
    server = start_server()
    material = handshake_material(pki, case)
    ctx = client_context(pki.ca_cert, *material, tls12_only=case == "tls-1.2-only", alpn=["h2"])
    assert probe(server.port, ctx) == ("refused", b"")
    assert server.stats.requests == 0


@pytest.mark.parametrize(("case", "words"), [
    ("no-certificate", "presented no certificate"), ("wrong-ca", "certificate failed verification"),
    ("tls-1.2-only", "did not offer TLS 1.3")])
def test_a_refused_handshake_is_recorded_with_its_reason(pki: Pki, start_server: StartServer, case: str,
                                                         words: str) -> None:
    """A harness playing a party names these when nothing of the IUT's arrives (D-JUDGE-REFUSED-CLIENT)."""
    server = start_server()
    material = handshake_material(pki, case)
    ctx = client_context(pki.ca_cert, *material, tls12_only=case == "tls-1.2-only", alpn=["h2"])
    assert probe(server.port, ctx) == ("refused", b"")
    refused = list(server.server.refused)
    assert [refusal.stage for refusal in refused] == ["tls-handshake"], refused
    assert words in refused[0].detail


def test_plain_text_http_to_the_tls_port_is_recorded_as_such(start_server: StartServer) -> None:
    server = start_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        raw.sendall(b"POST /proposals HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n")
        assert raw.recv(100) == b""  # the server closes it: nothing sent back
    assert [refusal.detail for refusal in server.server.refused] == [
        "the client spoke plain-text HTTP, not TLS (§5.1 requires TLS 1.3)"]


def test_a_valid_client_and_a_dropped_socket_are_not_recorded_as_refused(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    ctx = client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"), alpn=["h2"])
    assert probe(server.port, ctx)[0] == "answered"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        raw.sendall(b"\x16\x03\x01")  # the start of a ClientHello, then the socket closes
    with _client(pki) as client:  # a full exchange after it: the server has seen the drop by then
        assert client.get(server.base_uri).status_code == 200
    assert list(server.server.refused) == []


def test_tls12_is_refused_even_without_client_authentication(pki: Pki, start_server: StartServer) -> None:
    server = start_server(require_client_cert=False)
    ctx = client_context(pki.ca_cert, tls12_only=True, alpn=["h2"])
    assert probe(server.port, ctx) == ("refused", b"")


# ----------------------------------------------------------------------------- identity


@pytest.mark.parametrize("party", ["drafter-1", "router"])
def test_handler_sees_the_client_certificate_uri_san(pki: Pki, start_server: StartServer, party: str) -> None:
    server = start_server()
    with _client(pki, party) as client:
        response = client.post(server.base_uri + "proposals?x=1", content=b"\xa0")
    assert response.http_version == "HTTP/2"
    assert response.text == f"{PARTIES[party]}|POST|/proposals|x=1|1"


def test_ca_valid_certificates_carry_their_own_identity_or_none(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    results = {}
    for label, pair in (("other", pki.other_party), ("none", pki.no_uri_san)):
        ctx = client_context(pki.ca_cert, pair.cert, pair.key)
        with httpx.Client(http2=True, verify=ctx, timeout=TIMEOUT) as client:
            results[label] = client.get(server.base_uri).text.split("|")[0]
    assert results == {"other": pki.other_party_uri, "none": "<none>"}
    assert results["other"] != PARTIES["drafter-1"]


def test_base_uri_names_the_bound_port(start_server: StartServer) -> None:
    server = start_server()
    assert server.port > 0
    assert server.base_uri == f"https://127.0.0.1:{server.port}/"


# ----------------------------------------------------------------------------- HTTP/1.1


def test_http11_request_gets_505_and_the_connection_closes(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    cert, key = pki.cert("drafter-1"), pki.key("drafter-1")
    ctx = client_context(pki.ca_cert, cert, key, alpn=["http/1.1"])
    request = b"POST /proposals HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n"
    outcome, data = probe(server.port, ctx, request, until_eof=True)
    assert outcome == "answered"
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 505 ")
    assert json.loads(body)["status"] == 505
    assert server.stats.requests == 0
    assert [(r.stage, "POST /proposals HTTP/1.1" in r.detail) for r in server.server.refused] == [("http/1.1", True)]


def test_h2_preface_without_alpn_is_closed_unanswered(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    ctx = client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"))
    assert probe(server.port, ctx, PREFACE) == ("refused", b"")
    assert [refusal.stage for refusal in server.server.refused] == ["alpn"]


def test_an_http2_protocol_error_is_recorded_with_the_client_identity(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    ctx = client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"), alpn=["h2"])
    data_on_stream_0 = bytes.fromhex("000001000100000000") + b"x"  # DATA on stream 0: a PROTOCOL_ERROR (§6.1)
    probe(server.port, ctx, PREFACE + data_on_stream_0, until_eof=True)
    refused = list(server.server.refused)
    assert [(refusal.stage, refusal.identity) for refusal in refused] == [("h2-protocol", PARTIES["drafter-1"])]


def test_httpx_http1_client_is_refused(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    ctx = client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"))
    with httpx.Client(http1=True, http2=False, verify=ctx, timeout=TIMEOUT) as client:
        response = client.get(server.base_uri)
    assert response.status_code == 505
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE


# ----------------------------------------------------------------------------- body limit

MIB = 1 << 20


def _raw_context(pki: Pki) -> object:
    return client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"), alpn=["h2"])


def _answered(raw: RawH2, stream_id: int) -> object:
    return lambda received: bool(received.statuses(stream_id)) and bool(received.resets(stream_id))


def test_declared_64_mib_body_gets_413_and_a_reset_before_any_byte_is_buffered(
        pki: Pki, start_server: StartServer) -> None:
    calls: list[Request] = []

    async def handler(request: Request) -> Response:
        calls.append(request)
        return Response(200)

    server = start_server(handler)

    async def go() -> tuple[list[int], list[str], list[int]]:
        raw = await RawH2.open("127.0.0.1", server.port, _raw_context(pki))  # type: ignore[arg-type]
        try:
            await raw.send([raw.request(1, "POST", "/proposals", content_length=64 * MIB)])
            received = await raw.read_until(_answered(raw, 1), timeout_s=10)
            # Whatever the client sends on now is not read into a buffer.
            await raw.send([raw.data(1, bytes(16_000)) for _ in range(32)])
            await raw.send([raw.request(3, "GET", "/after", end_stream=True)])
            received = await raw.read_until(lambda r: bool(r.statuses(3)), timeout_s=10)
            return received.statuses(1), received.resets(1), received.statuses(3)
        finally:
            await raw.close()

    statuses, resets, after = asyncio.run(go())
    assert statuses == [413]
    assert resets[0] == "NO_ERROR"  # RFC 9113 §8.1: stop sending the request, without error
    assert after == [200]  # the connection survives
    assert server.stats.largest_body_buffered == 0
    assert server.stats.bodies_refused == 1
    assert [c.method for c in calls] == ["GET"]  # the POST never reached the handler


def test_streamed_body_is_refused_at_the_limit_and_not_read_on(pki: Pki, start_server: StartServer) -> None:
    limit = MIB
    server = start_server(max_body=limit, initial_window=4 * MIB)

    async def go() -> tuple[list[int], list[str]]:
        raw = await RawH2.open("127.0.0.1", server.port, _raw_context(pki))  # type: ignore[arg-type]
        try:
            chunk = bytes(16_000)
            frames = [raw.request(1, "PUT", "/objects/big")]  # no content-length: the limit is met while streaming
            frames += [raw.data(1, chunk) for _ in range(2 * MIB // len(chunk))]
            await raw.send(frames)
            received = await raw.read_until(_answered(raw, 1), timeout_s=10)
            return received.statuses(1), received.resets(1)
        finally:
            await raw.close()

    statuses, resets = asyncio.run(go())
    assert statuses == [413] and resets[0] == "NO_ERROR"
    assert server.stats.bodies_refused == 1
    assert server.stats.requests == 0
    assert 0 < server.stats.largest_body_buffered <= limit


def test_body_at_the_limit_is_accepted(pki: Pki, start_server: StartServer) -> None:
    server = start_server(max_body=MIB)
    with _client(pki) as client:
        response = client.post(server.base_uri, content=b"\x01" * MIB)
    assert response.status_code == 200
    assert response.text.endswith(f"|{MIB}")


# ----------------------------------------------------------------------------- handler errors


def test_protocol_error_becomes_its_problem_document(pki: Pki, start_server: StartServer) -> None:
    async def handler(request: Request) -> Response:
        raise ProtocolError(ProblemType.STALE_EPOCH, "epoch 1 is not 2")

    server = start_server(handler)
    with _client(pki) as client:
        response = client.post(server.base_uri + "proposals", content=b"\xa0")
    assert response.status_code == 409
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert response.json() == {
        "type": "urn:ietf:params:sdcp:problem:sdcp-stale-epoch",
        "title": "sdcp-stale-epoch",
        "status": 409,
        "detail": "epoch 1 is not 2",
    }


def test_handler_crash_is_a_500_problem_and_the_server_lives_on(pki: Pki, start_server: StartServer) -> None:
    async def handler(request: Request) -> Response:
        if request.path == "/boom":
            raise RuntimeError("planted")
        return Response(204)

    server = start_server(handler)
    with _client(pki) as client:
        crashed = client.get(server.base_uri + "boom")
        after = client.get(server.base_uri + "fine")
    assert crashed.status_code == 500
    assert crashed.json()["type"] == "about:blank"
    assert after.status_code == 204
    assert server.stats.handler_errors == 1


# ----------------------------------------------------------------------------- faults


def _fault_handler(fault: TransportFault) -> object:
    async def handler(request: Request) -> Response:
        return Response(200, b"ok") if request.path == "/fine" else Response(200, fault=fault)

    return handler


@pytest.mark.parametrize("fault", list(TransportFault))
def test_fault_is_committed_instead_of_an_answer(pki: Pki, start_server: StartServer, fault: TransportFault) -> None:
    server = start_server(_fault_handler(fault))
    with _client(pki) as client:
        with pytest.raises(httpx.TransportError):
            client.get(server.base_uri + "fault")
        assert client.get(server.base_uri + "fine").text == "ok"
    # A stream reset keeps the connection; GOAWAY and close force a new one.
    expected_connections = 1 if fault is TransportFault.RESET_STREAM else 2
    assert server.stats.connections == expected_connections


# ----------------------------------------------------------------------------- concurrency


def test_64_streams_are_served_concurrently_on_one_connection(pki: Pki, start_server: StartServer) -> None:
    streams = 64
    arrived = 0
    all_arrived: asyncio.Event | None = None

    async def handler(request: Request) -> Response:
        # Each answer waits until every request is in the handler: a server that
        # serialised streams would never get there and the clients would time out.
        nonlocal arrived, all_arrived
        all_arrived = all_arrived or asyncio.Event()
        arrived += 1
        if arrived == streams:
            all_arrived.set()
        await asyncio.wait_for(all_arrived.wait(), timeout=10)
        return Response(200, request.path.encode())

    server = start_server(handler)

    async def run() -> list[str]:
        ctx = client_context(pki.ca_cert, pki.cert("drafter-1"), pki.key("drafter-1"))
        async with httpx.AsyncClient(http2=True, verify=ctx, timeout=TIMEOUT) as client:
            replies = await asyncio.gather(*(client.get(f"{server.base_uri}{i}") for i in range(streams)))
        return [r.text for r in replies]

    assert asyncio.run(run()) == [f"/{i}" for i in range(streams)]
    assert server.stats.connections == 1


def test_no_request_cap_per_connection(pki: Pki, start_server: StartServer) -> None:
    server = start_server()
    with _client(pki) as client:
        for _ in range(1100):  # hypercorn's default would GOAWAY at 1,000
            assert client.post(server.base_uri, content=b"x").status_code == 200
    assert server.stats.connections == 1
    assert server.stats.requests == 1100


def test_large_response_respects_flow_control(pki: Pki, start_server: StartServer) -> None:
    payload = hashlib.shake_256(b"sdcp").digest(5 * MIB + 123)

    async def handler(request: Request) -> Response:
        return Response(200, payload)

    server = start_server(handler)
    with _client(pki) as client:
        body = client.get(server.base_uri).content
    assert hashlib.sha256(body).digest() == hashlib.sha256(payload).digest()


# ----------------------------------------------------------------------------- shutdown


def test_stop_closes_the_listener_and_joins_the_thread(pki: Pki) -> None:
    from sdcp_conformance.transport.server import ServerConfig, run_server_in_thread

    from .conftest import echo_identity

    config = ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert)
    with run_server_in_thread(echo_identity, config) as running, _client(pki) as client:
        assert client.get(running.base_uri).status_code == 200
        port, thread = running.port, running.thread
    assert not thread.is_alive()
    assert running.loop.is_closed()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    assert "sdcp-h2-server" not in {t.name for t in threading.enumerate()}
