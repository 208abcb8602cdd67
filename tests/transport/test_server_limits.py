"""The server's limits against misbehaving clients: each is cut off, the well-behaved client is still served.

Every attack runs on its own raw connection (:mod:`sdcp_conformance.testing.raw_h2`)
while a well-behaved :class:`H2Client` keeps sending requests; the test
asserts what the attacker got back (408, ENHANCE_YOUR_CALM, a timeout GOAWAY,
a withheld window) and that every one of the good client's requests was
answered. No timings are asserted (figures: benchmarks/bench_server_attacks.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from h2.errors import ErrorCodes

from sdcp_conformance.testing.raw_h2 import RawH2, Received
from sdcp_conformance.transport.exchange import Timeouts
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.limits import RateLimit
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.server import RunningServer
from sdcp_conformance.transport.types import Request, Response

from .conftest import StartServer
from .tls_probe import client_context

KIB = 1 << 10
FLOOD = 1000
"""Frames per flood: well above every bucket's burst."""


async def proposals(request: Request) -> Response:
    """Stands in for POST proposals: answers once the whole body is in."""
    return Response(200, b"verdict:%d" % len(request.body), [("content-type", "application/sdcp+cbor")])


def _good(pki: Pki, server: RunningServer) -> H2Client:
    return H2Client(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert,
                    timeouts=Timeouts(connect=10, read=10, total=10), max_attempts=1)


async def _raw(pki: Pki, server: RunningServer, *, preface: bool = True) -> RawH2:
    context = client_context(pki.ca_cert, pki.cert("router"), pki.key("router"), alpn=["h2"])
    return await RawH2.open("127.0.0.1", server.port, context, preface=preface)


async def _while_attacked(pki: Pki, server: RunningServer, attack: Callable[[], Awaitable[Received]],
                          *, after: int = 5) -> tuple[Received, list[int]]:
    """Run ``attack`` while a good client sends requests; it goes on ``after`` more once the attack ended."""
    done = asyncio.Event()
    statuses: list[int] = []

    async def rounds() -> None:
        async with _good(pki, server) as client:
            remaining = after
            while remaining:
                response = await client.request("POST", "proposals", b"\xa1\x61r\x01")
                statuses.append(response.status)
                if done.is_set():
                    remaining -= 1
                else:
                    await asyncio.sleep(0)  # let the attack's coroutine run between rounds

    async def attacker() -> Received:
        try:
            return await attack()
        finally:
            done.set()

    received, _ = await asyncio.wait_for(asyncio.gather(attacker(), rounds()), timeout=60)
    return received, statuses


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# ----------------------------------------------------------------------------- slow bodies and headers


def test_a_body_dripped_a_byte_a_second_is_cut_off_while_another_clients_rounds_proceed(
        pki: Pki, start_server: StartServer) -> None:
    server = start_server(proposals, body_timeout_s=1.5)
    dripped = 0

    async def drip() -> Received:
        nonlocal dripped
        raw = await _raw(pki, server)
        try:
            await raw.send([raw.request(1, "POST", "/proposals", content_length=1000)])
            while not raw.received.statuses(1) and not raw.received.closed and dripped < 1000:
                await raw.send([raw.data(1, b"\x00")])
                dripped += 1
                await raw.read_until(lambda r: bool(r.statuses(1)), timeout_s=1.0)  # the drip's pace: 1 byte/s
            return await raw.read_until(lambda r: bool(r.resets(1)), timeout_s=5)
        finally:
            await raw.close()

    received, statuses = run(_while_attacked(pki, server, drip))
    assert received.statuses(1) == [408] and received.resets(1)[0] == "NO_ERROR"
    assert dripped < 10  # cut off long before its 1000 bytes
    assert statuses and set(statuses) == {200}
    assert server.stats.bodies_timed_out == 1 and server.stats.requests == len(statuses)


def test_an_unfinished_header_block_is_closed_at_the_header_timeout(pki: Pki, start_server: StartServer) -> None:
    server = start_server(proposals, header_timeout_s=1.0)

    async def hold() -> Received:
        raw = await _raw(pki, server)
        try:
            await raw.settle()  # our SETTINGS ACK must not land inside the header block
            block = raw.request(1, "POST", "/proposals").data
            await raw.send([raw.open_header_block(1, block[:4])])  # no END_HEADERS, no CONTINUATION ever
            return await raw.read_until(lambda r: r.goaway is not None, timeout_s=10)
        finally:
            await raw.close()

    received, statuses = run(_while_attacked(pki, server, hold))
    assert received.goaway is not None and set(statuses) == {200}
    assert server.stats.timed_out.get("header") == 1


@pytest.mark.parametrize("which", ["preface", "idle"])
def test_silent_connections_are_closed_by_their_timeout(pki: Pki, start_server: StartServer, which: str) -> None:
    server = start_server(proposals, preface_timeout_s=1.0, idle_timeout_s=1.0)

    async def silent() -> Received:
        raw = await _raw(pki, server, preface=which == "idle")  # "preface": TLS, then nothing at all
        try:
            return await raw.read_until(timeout_s=10)  # until the server closes
        finally:
            await raw.close()

    received, statuses = run(_while_attacked(pki, server, silent))
    assert received.closed and set(statuses) == {200}
    assert server.stats.timed_out.get(which) == 1


def test_a_response_the_client_never_reads_is_reset_at_the_send_timeout(pki: Pki, start_server: StartServer) -> None:
    async def large(request: Request) -> Response:
        return Response(200, bytes(256 * KIB))  # four times the client's 64 KiB window

    server = start_server(large, send_timeout_s=1.0)

    async def never_read() -> Received:
        raw = await _raw(pki, server)
        try:
            await raw.send([raw.request(1, "GET", "/big", end_stream=True)])
            return await raw.read_until(lambda r: bool(r.resets(1)), timeout_s=10)
        finally:
            await raw.close()

    received = run(never_read())
    assert received.resets(1) == ["CANCEL"]
    assert server.stats.sends_timed_out == 1


# ----------------------------------------------------------------------------- floods


def _flood_frames(raw: RawH2, kind: str) -> list[Any]:
    if kind == "rapid-reset":
        frames = []
        for i in range(FLOOD):
            stream_id = 2 * i + 1
            frames += [raw.request(stream_id, "GET", "/x", end_stream=True), raw.rst(stream_id, ErrorCodes.CANCEL)]
        return frames
    if kind == "settings":
        return [raw.settings() for _ in range(FLOOD)]
    if kind == "ping":
        return [raw.ping(i.to_bytes(8, "big")) for i in range(FLOOD)]
    if kind == "empty-data":
        return [raw.request(1, "POST", "/proposals"), *(raw.data(1) for _ in range(FLOOD))]
    if kind == "made-you-reset":
        # Each stream's window is made to overflow (RFC 9113 §6.9.1: a stream error h2 answers with
        # RST_STREAM(FLOW_CONTROL_ERROR)), so the server resets streams as fast as the client opens them.
        frames = []
        for i in range(FLOOD):
            stream_id = 2 * i + 1
            frames += [raw.request(stream_id, "POST", "/proposals"), raw.window_update(stream_id, (1 << 31) - 1)]
        return frames
    raise AssertionError(kind)


CALM_REASON = {"rapid-reset": "RST_STREAM", "settings": "SETTINGS", "ping": "PING", "empty-data": "empty DATA",
               "made-you-reset": "stream error"}


@pytest.mark.parametrize("kind", list(CALM_REASON))
def test_a_flood_gets_enhance_your_calm_while_a_good_client_is_answered(pki: Pki, start_server: StartServer,
                                                                        kind: str) -> None:
    server = start_server(proposals)

    async def flood() -> Received:
        raw = await _raw(pki, server)
        try:
            frames = _flood_frames(raw, kind)
            for start in range(0, len(frames), 100):
                if raw.received.goaway is not None:
                    break
                with_errors = raw.send(frames[start:start + 100])
                try:
                    await with_errors
                except (ConnectionError, OSError):
                    break  # the server closed on us mid-flood
                await raw.read_until(lambda r: r.goaway is not None, timeout_s=0.01)
            return await raw.read_until(lambda r: r.closed, timeout_s=10)
        finally:
            await raw.close()

    received, statuses = run(_while_attacked(pki, server, flood))
    assert received.goaway_code == "ENHANCE_YOUR_CALM" and received.closed
    assert statuses and set(statuses) == {200}
    assert server.stats.calm_reasons == {CALM_REASON[kind]: 1}


# ----------------------------------------------------------------------------- frames and budgets


def test_a_frame_declared_larger_than_allowed_is_refused_at_its_header(pki: Pki, start_server: StartServer) -> None:
    server = start_server(proposals)

    async def oversized() -> Received:
        raw = await _raw(pki, server)
        try:
            await raw.send([raw.request(1, "POST", "/proposals")])
            header = ((1 << 24) - 1).to_bytes(3, "big") + b"\x00\x00" + (1).to_bytes(4, "big")  # DATA of 16 MiB …
            await raw.send_bytes(header + bytes(1000))  # … of which 1000 bytes ever come
            return await raw.read_until(lambda r: r.closed, timeout_s=10)
        finally:
            await raw.close()

    received, statuses = run(_while_attacked(pki, server, oversized))
    assert received.goaway_code == "FRAME_SIZE_ERROR" and set(statuses) == {200}
    assert server.stats.frame_size_refused == 1
    assert server.stats.largest_body_buffered < 1000  # the good client's bodies; none of the oversized frame


def test_a_connection_over_its_buffer_budget_gets_no_more_flow_control_credit(pki: Pki,
                                                                               start_server: StartServer) -> None:
    budget, window, chunk = 640 * KIB, 1 << 20, bytes(16 * KIB)
    server = start_server(proposals, connection_buffer_budget=budget, connection_window=window, initial_window=window)

    async def hoard() -> Received:
        raw = await _raw(pki, server)
        try:
            frames = [raw.request(1, "PUT", "/a"), raw.request(3, "PUT", "/b")]
            frames += [raw.data(1 + 2 * (i % 2), chunk) for i in range(window // len(chunk))]  # the whole window
            await raw.send(frames)
            # h2 returns credit once half the window is processed: that much comes back within the budget …
            received = await raw.read_until(lambda r: _credit(r) >= window // 2, timeout_s=5)
            credit = _credit(received)
            await raw.send([raw.data(1, chunk) for _ in range(credit // len(chunk))])  # … and is spent at once
            # A server ignoring its budget would now give back another half window; this one must not.
            return await raw.read_until(lambda r: _credit(r) > credit, timeout_s=2)
        finally:
            await raw.close()

    received, statuses = run(_while_attacked(pki, server, hoard))
    assert window // 2 <= _credit(received) <= budget
    assert set(statuses) == {200}
    assert server.stats.buffered_peak >= window  # it all arrived: the budget held back credit, not bytes


def _stream_credit(received: Received, stream_id: int) -> int:
    from hyperframe.frame import WindowUpdateFrame

    return sum(f.window_increment for f in received.frames
               if isinstance(f, WindowUpdateFrame) and f.stream_id == stream_id)


def _credit(received: Received) -> int:
    from hyperframe.frame import WindowUpdateFrame

    opening = (1 << 20) - 65535  # the server's first WINDOW_UPDATE raises the connection window to 1 MiB
    return sum(f.window_increment for f in received.frames
               if isinstance(f, WindowUpdateFrame) and f.stream_id == 0) - opening


def test_a_declared_body_that_the_server_wide_budget_cannot_hold_gets_503(pki: Pki,
                                                                          start_server: StartServer) -> None:
    server = start_server(proposals, server_buffer_budget=512 * KIB, connection_buffer_budget=1 << 20)

    async def fill_then_ask() -> tuple[Received, Received]:
        hoarder, asker = await _raw(pki, server), await _raw(pki, server)
        try:
            half = [hoarder.data(1, bytes(16 * KIB)) for _ in range(32)]  # 512 KiB of a body that never ends
            await hoarder.send([hoarder.request(1, "PUT", "/a"), *half])
            # h2 credits the stream once half its 1 MiB window is processed: then all 512 KiB are buffered.
            await hoarder.read_until(lambda r: _stream_credit(r, 1) > 0, timeout_s=10)
            await asker.send([asker.request(1, "PUT", "/b", content_length=256 * KIB)])
            asked = await asker.read_until(lambda r: bool(r.resets(1)), timeout_s=10)
            return hoarder.received, asked
        finally:
            await hoarder.close()
            await asker.close()

    _, asked = run(fill_then_ask())
    assert asked.statuses(1) == [503] and asked.resets(1) == ["NO_ERROR"]


# ----------------------------------------------------------------------------- graceful GOAWAY every N requests


def test_max_requests_sends_graceful_goaways_and_no_request_is_lost(pki: Pki, start_server: StartServer) -> None:
    server = start_server(proposals, max_requests=5)

    async def go() -> tuple[list[int], int]:
        async with _good(pki, server) as client:
            sequential = [(await client.request("POST", "proposals", b"s")).status for _ in range(12)]
            concurrent = await asyncio.gather(*(client.request("POST", "sessions", b"c") for _ in range(40)))
            return sequential + [r.status for r in concurrent], client.connections_opened

    statuses, connections = run(go())
    assert statuses == [200] * 52
    assert server.stats.requests == 52  # each processed once, the refused ones resent (RFC 9113 §8.7)
    # GOAWAY after the 5th and 10th sequential requests; the concurrent batch arrives together, so the GOAWAY
    # on its connection names all of its streams (the highest seen) and every one is answered there.
    assert server.stats.graceful_goaways == 3 and connections == 3


def test_stream_error_rate_is_its_own_bucket() -> None:
    """Sanity of the limits' shape: a bucket refuses past its burst and refills at its rate."""
    from sdcp_conformance.transport.limits import TokenBucket

    bucket = TokenBucket(RateLimit(3, 2.0), now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(0.5) and not bucket.take(0.5)


def test_one_identity_holding_many_connections_gets_no_more_while_others_are_served(
        pki: Pki, start_server: StartServer) -> None:
    server = start_server(proposals, max_connections_per_identity=3)

    async def hold() -> Received:
        held = [await _raw(pki, server) for _ in range(3)]  # the router identity's share …
        try:
            for raw in held:
                await raw.settle()
            extra = await _raw(pki, server)  # … and one more
            try:
                return await extra.read_until(lambda r: r.closed, timeout_s=10)
            finally:
                await extra.close()
        finally:
            for raw in held:
                await raw.close()

    received, statuses = run(_while_attacked(pki, server, hold))  # the good client is drafter-1
    assert received.goaway_code == "ENHANCE_YOUR_CALM" and received.closed
    assert set(statuses) == {200}
    assert server.stats.calm_reasons == {"connections per identity": 1}
