"""The httpx client: identity, typed bodies and problems, refusal classes and retries."""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable
from typing import Any

import cbor2
import pytest

from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.problems import PROBLEM_CBOR_MEDIA_TYPE, ProblemType
from sdcp_conformance.transport.client import (
    FailureKind,
    SdcpClient,
    Timeouts,
    is_retry_safe,
)
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.types import Request, Response, TransportFault

from .conftest import (
    PARTIES,
    REFUSED_CERTIFICATES,
    SHORT,
    StartServer,
    drafter_client,
    handshake_material,
    request_failure,
    run,
)

_client = functools.partial(drafter_client, SdcpClient)


async def cbor_echo(request: Request) -> Response:
    """Decodes with cbor2 (not our codec) and answers the identity and the body's SHA-256."""
    message = cbor2.loads(request.body)
    reply = {"who": request.peer_identity, "got": message, "sha": hashlib.sha256(request.body).digest()}
    return Response(200, cbor2.dumps(reply), [("content-type", "application/sdcp+cbor")])


def test_send_message_round_trips_cbor_with_identity(pki: Pki, start_server: StartServer) -> None:
    server = start_server(cbor_echo)
    message = {"session": bytes(16), "epoch": 1, "tokens": [1, 2, 3]}

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            response = await client.send_message("POST", "proposals", message)
        return response

    response = run(go)
    assert response.ok and response.attempts == 1
    decoded = response.message()
    assert decoded["who"] == PARTIES["drafter-1"]
    assert decoded["got"] == message
    # Deterministic encoding (P1-MSG-1): keys sorted bytewise by their encoding, here by length.
    expected_wire = b"\xa3" + b"\x65epoch\x01" + b"\x66tokens\x83\x01\x02\x03" + b"\x67session\x50" + bytes(16)
    assert decoded["sha"] == hashlib.sha256(expected_wire).digest()


def test_large_body_arrives_intact(pki: Pki, start_server: StartServer) -> None:
    async def digest(request: Request) -> Response:
        return Response(200, hashlib.sha256(request.body).digest())

    server = start_server(digest)
    body = hashlib.shake_256(b"q_rows").digest(3 * (1 << 20) + 7)

    async def go() -> bytes:
        async with _client(pki, server.base_uri) as client:
            return (await client.request("PUT", "objects/q", body)).body

    assert run(go) == hashlib.sha256(body).digest()


def test_message_refuses_a_non_cbor_media_type(pki: Pki, start_server: StartServer) -> None:
    server = start_server()  # echo_identity answers text/plain

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("GET", "x")

    with pytest.raises(MalformedMessage):
        run(go).message()


def test_problem_is_typed_with_its_state(pki: Pki, start_server: StartServer) -> None:
    state = {"session": b"\x01" * 16, "epoch": 2, "round": 5, "committed": 9, "digest": b"\xff" * 32}

    async def stale(request: Request) -> Response:
        raise ProtocolError(ProblemType.STALE_BASE, "round 3 is not 6", state=state)

    server = start_server(stale)

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("POST", "proposals", b"\xa0")

    response = run(go)
    problem = response.problem
    assert response.status == 409 and response.attempts == 1  # a 4xx is final
    assert problem is not None
    assert problem.problem_type is ProblemType.STALE_BASE
    assert problem.state == state
    assert problem.members["state"]["session"] == "AQEBAQEBAQEBAQEBAQEBAQ"  # base64url, no padding


def test_cbor_problem_is_accepted(pki: Pki, start_server: StartServer) -> None:
    async def handler(request: Request) -> Response:
        doc = {"type": "https://example.org/sdcp-not-assigned", "status": 403, "detail": "no"}
        return Response(403, cbor2.dumps(doc), [("content-type", PROBLEM_CBOR_MEDIA_TYPE)])

    server = start_server(handler)

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("POST", "proposals", b"\xa0")

    problem = run(go).problem
    assert problem is not None and problem.problem_type is ProblemType.NOT_ASSIGNED


@pytest.mark.parametrize("case", REFUSED_CERTIFICATES)
def test_refused_client_certificate_is_classified_refused(pki: Pki, start_server: StartServer, case: str) -> None:
    server = start_server()
    pair = handshake_material(pki, case)
    # GET output is retry-safe, yet a refusal is final
    failure = request_failure(lambda: _client(pki, server.base_uri, pair), "GET", "output")
    assert failure.kind is FailureKind.REFUSED
    assert failure.attempts == 1
    assert server.stats.requests == 0


def test_server_certificate_from_unknown_ca_is_refused(pki: Pki, start_server: StartServer) -> None:
    server = start_server()

    failure = request_failure(lambda: SdcpClient(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"),
                                                 pki.wrong_ca_cert, timeouts=SHORT), "GET", "x")
    assert failure.kind is FailureKind.REFUSED


def _flaky(fault: TransportFault | int, failures: int) -> tuple[Callable[..., Any], list[str]]:
    seen: list[str] = []

    async def handler(request: Request) -> Response:
        seen.append(request.path)
        if len(seen) <= failures:
            return Response(fault) if isinstance(fault, int) else Response(200, fault=fault)
        return Response(200, b"verdict")

    return handler, seen


@pytest.mark.parametrize("fault", [TransportFault.GOAWAY, TransportFault.RESET_STREAM, 503, 429])
def test_proposal_is_retried_until_answered(pki: Pki, start_server: StartServer, fault: TransportFault | int) -> None:
    handler, seen = _flaky(fault, failures=2)
    server = start_server(handler)

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("POST", "proposals", b"\xa0")

    response = run(go)
    assert (response.status, response.body, response.attempts) == (200, b"verdict", 3)
    assert seen == ["/proposals"] * 3
    if fault is TransportFault.GOAWAY:
        assert server.stats.connections == 3  # each retry on a fresh connection


def test_retries_are_bounded(pki: Pki, start_server: StartServer) -> None:
    handler, seen = _flaky(TransportFault.RESET_STREAM, failures=10)
    server = start_server(handler)
    failure = request_failure(lambda: _client(pki, server.base_uri), "POST", "proposals", b"\xa0")
    assert failure.kind is FailureKind.CONNECTION_LOST
    assert failure.attempts == 3 and len(seen) == 3


def test_non_idempotent_request_is_sent_once(pki: Pki, start_server: StartServer) -> None:
    handler, seen = _flaky(503, failures=1)
    server = start_server(handler)

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("POST", "sessions", b"\xa0")

    assert run(go).status == 503
    assert seen == ["/sessions"]


def test_read_timeout_is_classified(pki: Pki, start_server: StartServer) -> None:
    release = asyncio.Event()

    async def stall(request: Request) -> Response:
        await release.wait()
        return Response(200)

    server = start_server(stall)
    quick = Timeouts(connect=5, read=0.2, write=5, total=5)
    failure = request_failure(lambda: _client(pki, server.base_uri, timeouts=quick, max_attempts=1), "GET", "output")
    assert failure.kind is FailureKind.TIMEOUT


@pytest.mark.parametrize(
    ("method", "path", "safe"),
    [
        ("POST", "/proposals", True),
        ("GET", "/sessions/AAAAAAAAAAAAAAAAAAAAAA/output", True),
        ("POST", "/sessions", False),
        ("PUT", "/sessions/AAAAAAAAAAAAAAAAAAAAAA/drafter", False),
        ("POST", "/events", False),
        ("POST", "/assignments", False),
    ],
)
def test_only_draft_idempotent_calls_are_retry_safe(method: str, path: str, safe: bool) -> None:
    assert is_retry_safe(method, path) is safe
