"""The project's server (the harness's played roles and MLC, every reference role) answers clients that frame their
requests in ways RFC 9113 allows but a typical client never uses: an IUT's HTTP/2 stack may, and refusing it would
be a false FAIL of the IUT. Each request carries a body whose SHA-256 the handler answers, so a byte lost or added
in reassembly shows."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable

import pytest
from hyperframe.frame import DataFrame, ExtensionFrame, Frame, HeadersFrame, PingFrame, PriorityFrame, SettingsFrame

from sdcp_conformance.testing.raw_h2 import RawH2, Received
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.types import Request, Response

from .conftest import StartServer
from .tls_probe import client_context

BODY = bytes(range(256)) * 40  # 10 KiB


async def digest(request: Request) -> Response:
    return Response(200, hashlib.sha256(request.body).digest(), [("content-type", "application/octet-stream")])


def _padded(raw: RawH2) -> list[Frame]:
    """The body in DATA frames of 100 octets, each padded with 37 (§6.1)."""
    frames: list[Frame] = [raw.request(1, "PUT", "/o", content_length=len(BODY))]
    for start in range(0, len(BODY), 100):
        frame = DataFrame(1, BODY[start:start + 100], flags=["PADDED"])
        frame.pad_length = 37
        frames.append(frame)
    frames.append(DataFrame(1, b"", flags=["END_STREAM"]))
    return frames


def _continuation(raw: RawH2) -> list[Frame]:
    """The header block in a HEADERS frame and three CONTINUATION frames (§6.10)."""
    block = raw.request(1, "PUT", "/o", content_length=len(BODY)).data
    cut = [0, 5, 11, 17, len(block)]
    frames: list[Frame] = [raw.open_header_block(1, block[cut[0]:cut[1]])]
    for index in range(1, 4):
        frames.append(raw.continuation(1, block[cut[index]:cut[index + 1]], end=index == 3))
    return [*frames, raw.data(1, BODY, end_stream=True)]


def _trailers(raw: RawH2) -> list[Frame]:
    """Request trailers: a second HEADERS frame, with END_STREAM, after the body (§8.1; SDCP gives them no
    meaning, so the request is served without them)."""
    trailer = HeadersFrame(1, raw.encoder.encode([("x-trailer", "end")]), flags=["END_HEADERS", "END_STREAM"])
    return [raw.request(1, "PUT", "/o", content_length=len(BODY)), raw.data(1, BODY), trailer]


def _priority_ping_settings(raw: RawH2) -> list[Frame]:
    """A PRIORITY frame, a PING and a SETTINGS change between the frames of the request (§6.3, §6.7, §6.5)."""
    return [PriorityFrame(1, depends_on=0, stream_weight=200), raw.request(1, "PUT", "/o", content_length=len(BODY)),
            PingFrame(0, b"12345678"), raw.data(1, BODY[:5000]), SettingsFrame(0, {0x1: 0}),
            raw.data(1, BODY[5000:], end_stream=True)]


def _one_octet_frames(raw: RawH2) -> list[Frame]:
    """The first 300 octets one per DATA frame, then the rest, without a content-length (§8.1.1 lets it go)."""
    frames: list[Frame] = [raw.request(1, "PUT", "/o")]
    frames += [raw.data(1, BODY[index:index + 1]) for index in range(300)]
    return [*frames, raw.data(1, BODY[300:], end_stream=True)]


class _Extension(ExtensionFrame):
    """A frame of a type no RFC defines; hyperframe's own serialises its length as 0."""

    def serialize(self) -> bytes:
        return (len(self.body).to_bytes(3, "big") + bytes([self.type, self.flag_byte])
                + self.stream_id.to_bytes(4, "big") + self.body)


def _unknown_frames_and_settings(raw: RawH2) -> list[Frame]:
    """Frames of an unknown type on the connection and on the stream, and a SETTINGS identifier no RFC defines,
    between the frames of the request: a receiver ignores them (RFC 9113 §4.1, §5.5, §6.5.2)."""
    return [_Extension(0xFA, 0, 0, b"extension"), raw.request(1, "PUT", "/o", content_length=len(BODY)),
            _Extension(0xFB, 1, 0xFF, b"more extension"), SettingsFrame(0, {0xFAFA: 7}),
            raw.data(1, BODY, end_stream=True)]


FRAMINGS: dict[str, Callable[[RawH2], list[Frame]]] = {
    "padded-data": _padded, "continuation": _continuation, "trailers": _trailers,
    "priority-ping-settings": _priority_ping_settings, "one-octet-frames": _one_octet_frames,
    "unknown-frames-and-settings": _unknown_frames_and_settings,
}


@contextlib.asynccontextmanager
async def _raw_connection(pki: Pki, port: int) -> AsyncIterator[RawH2]:
    """A raw HTTP/2 connection as the router, past the server's SETTINGS; closed after the block."""
    context = client_context(pki.ca_cert, pki.cert("router"), pki.key("router"), alpn=["h2"])
    raw = await RawH2.open("127.0.0.1", port, context)
    try:
        await raw.settle()
        yield raw
    finally:
        await raw.close()


def _response_ended(received: Received) -> bool:
    return any(isinstance(f, DataFrame) and "END_STREAM" in f.flags for f in received.frames)


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_a_request_framed_as_the_rfc_allows_is_answered(pki: Pki, start_server: StartServer, framing: str) -> None:
    server = start_server(digest)

    async def go() -> Received:
        async with _raw_connection(pki, server.port) as raw:
            await raw.send(FRAMINGS[framing](raw))
            return await raw.read_until(lambda r: _response_ended(r) or r.goaway is not None, timeout_s=10)

    received = asyncio.run(go())
    assert received.goaway is None and not received.resets(1), (received.goaway, received.resets(1))
    assert received.statuses(1) == [200]
    body = b"".join(bytes(f.data) for f in received.frames if isinstance(f, DataFrame) and f.stream_id == 1)
    assert body == hashlib.sha256(BODY).digest()


@pytest.mark.parametrize("reset", [True, False], ids=["reset-after-answer", "no-reset"])
def test_a_reset_that_crossed_the_answer_reports_it_undelivered(pki: Pki, start_server: StartServer,
                                                                reset: bool) -> None:
    """A client that gave up on a request (its timeout) resets the stream; when that reset crosses the whole answer,
    the client never read it, and the server says so (``Response.undelivered``): the harness must know whether a
    drafter learned a final answer (D-JUDGE-D17). A client that read the answer resets nothing, and nothing is said.
    The PING after it is answered only once the server has handled every frame before it, so no sleep is needed."""
    lost: list[str] = []

    async def answer(request: Request) -> Response:
        return Response(409, b"final", undelivered=lambda: lost.append(request.path))

    server = start_server(answer)

    async def go() -> Received:
        async with _raw_connection(pki, server.port) as raw:
            await raw.send([raw.request(1, "POST", "/proposals", end_stream=True)])
            await raw.read_until(_response_ended, timeout_s=10)
            await raw.send([*([raw.rst(1)] if reset else []), raw.ping(b"crossing")])
            return await raw.read_until(lambda r: any(isinstance(f, PingFrame) and "ACK" in f.flags
                                                      for f in r.frames), timeout_s=10)

    received = asyncio.run(go())
    assert received.statuses(1) == [409] and received.goaway is None
    assert lost == (["/proposals"] if reset else [])
