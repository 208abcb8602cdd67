"""The lean h2 client: same answers as httpx, precise refusal, early 413, GOAWAY, many streams."""

from __future__ import annotations

import asyncio
import functools
import hashlib
from typing import Any

import pytest

from sdcp_conformance.transport.client import FailureKind, Timeouts, TransportFailure
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.types import Request, Response, TransportFault

from .conftest import (
    PARTIES,
    REFUSED_CERTIFICATES,
    StartServer,
    drafter_client,
    handshake_material,
    request_failure,
    run,
)

_client = functools.partial(drafter_client, H2Client)


def test_request_reaches_handler_with_identity(pki: Pki, start_server: StartServer) -> None:
    server = start_server()

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("POST", "proposals?a=b", b"xyz")

    response = run(go)
    assert (response.status, response.content_type) == (200, "text/plain")
    assert response.body.decode() == f"{PARTIES['drafter-1']}|POST|/proposals|a=b|3"


def test_base_uri_path_prefixes_every_request(pki: Pki, start_server: StartServer) -> None:
    server = start_server()

    async def go() -> Any:
        async with _client(pki, server.base_uri + "verifier/") as client:
            return await client.request("GET", "sessions/x/output")

    assert run(go).body.decode().split("|")[2] == "/verifier/sessions/x/output"


@pytest.mark.parametrize("case", REFUSED_CERTIFICATES)
def test_refused_certificate_fails_at_connect(pki: Pki, start_server: StartServer, case: str) -> None:
    server = start_server()
    pair = handshake_material(pki, case)

    async def go() -> None:
        async with _client(pki, server.base_uri, pair) as client:
            await client.connect()

    with pytest.raises(TransportFailure) as caught:
        run(go)
    assert caught.value.kind is FailureKind.REFUSED


def test_64_mib_upload_stops_at_the_early_413(pki: Pki, start_server: StartServer) -> None:
    limit = 1 << 20
    server = start_server(max_body=limit)
    body = bytes(64 << 20)

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            refused = await client.request("PUT", "objects/big", body)
            after = await client.request("GET", "x")
            return refused, after, client.connections_opened

    refused, after, connections = run(go)
    assert refused.status == 413 and refused.problem is not None
    assert refused.problem.status == 413
    assert after.status == 200 and connections == 1
    assert server.stats.largest_body_buffered == 0  # refused on the declared length


def test_goaway_is_retried_on_a_fresh_connection(pki: Pki, start_server: StartServer) -> None:
    calls = 0

    async def handler(request: Request) -> Response:
        nonlocal calls
        calls += 1
        return Response(200, fault=TransportFault.GOAWAY) if calls == 1 else Response(200, b"v")

    server = start_server(handler)

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            return await client.request("POST", "proposals", b"\xa0"), client.connections_opened

    response, connections = run(go)
    assert (response.status, response.body, response.attempts) == (200, b"v", 2)
    assert connections == 2 and server.stats.connections == 2


def test_reset_stream_is_connection_lost_when_not_retried(pki: Pki, start_server: StartServer) -> None:
    async def handler(request: Request) -> Response:
        return Response(200, fault=TransportFault.RESET_STREAM)

    server = start_server(handler)
    failure = request_failure(lambda: _client(pki, server.base_uri), "POST", "sessions", b"\xa0")
    assert failure.kind is FailureKind.CONNECTION_LOST
    assert failure.attempts == 1


def test_stalled_response_times_out_and_the_connection_stays_usable(pki: Pki, start_server: StartServer) -> None:
    async def handler(request: Request) -> Response:
        if request.path == "/stall":
            await asyncio.Event().wait()  # never answers; cancelled when the client resets
        return Response(200, b"fine")

    server = start_server(handler)
    quick = Timeouts(connect=5, read=0.3, write=5, total=5)

    async def go() -> Any:
        async with _client(pki, server.base_uri, timeouts=quick, max_attempts=1) as client:
            with pytest.raises(TransportFailure) as caught:
                await client.request("GET", "stall")
            return caught.value.kind, await client.request("GET", "fine")

    kind, after = run(go)
    assert kind is FailureKind.TIMEOUT
    assert after.body == b"fine"


def test_a_request_its_caller_cancels_resets_its_stream(pki: Pki, start_server: StartServer) -> None:
    """A caller that gives up (a case's task cancelled) leaves no stream behind: the server sees RST_STREAM at once,
    and no failure is later set on a stream nobody awaits (asyncio's "exception was never retrieved")."""
    entered, reset = asyncio.Event(), asyncio.Event()

    async def handler(request: Request) -> Response:
        entered.set()
        try:
            await asyncio.Event().wait()  # never answers
        except asyncio.CancelledError:
            reset.set()
            raise
        return Response(200)

    server = start_server(handler)

    async def go() -> int:
        async with _client(pki, server.base_uri, max_attempts=1) as client:
            task = asyncio.ensure_future(client.request("POST", "stall", b"x"))
            await asyncio.wait_for(entered.wait(), 5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(reset.wait(), 5)  # the client is still open: only its RST_STREAM ends it
            connection = client._connection
            assert connection is not None
            return len(connection.streams)

    assert run(go) == 0


def test_concurrent_streams_share_one_connection(pki: Pki, start_server: StartServer) -> None:
    async def digest(request: Request) -> Response:
        return Response(200, hashlib.sha256(request.body).digest())

    server = start_server(digest)
    bodies = [hashlib.shake_256(bytes([i])).digest(100 + 5000 * i) for i in range(40)]

    async def go() -> Any:
        async with _client(pki, server.base_uri) as client:
            replies = await asyncio.gather(*(client.request("PUT", f"o/{i}", b) for i, b in enumerate(bodies)))
            return [r.body for r in replies], client.connections_opened

    digests, connections = run(go)
    assert digests == [hashlib.sha256(b).digest() for b in bodies]
    assert connections == 1 and server.stats.connections == 1
