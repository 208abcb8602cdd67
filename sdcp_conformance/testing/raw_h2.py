"""A raw HTTP/2 client that sends frames one by one: the attacks a correct client never makes.

h2's client state machine refuses to build most of them (a RST_STREAM flood,
a WINDOW_UPDATE that overflows a stream's window, a header block left open),
so frames are built with hyperframe and HPACK blocks with hpack, and the
server's frames are parsed with hyperframe alone — this client keeps no
HTTP/2 state to get confused by what the server answers. Used by the server
tests and ``benchmarks/bench_server_attacks.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import hpack
from h2.errors import ErrorCodes
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_HEADER = 9


@dataclass
class Received:
    """What the server sent back on a raw connection."""

    frames: list[Frame] = field(default_factory=list)
    headers: list[tuple[int, list[tuple[bytes, bytes]]]] = field(default_factory=list)
    """(stream id, decoded fields) of every header block, decoded in order with one HPACK decoder."""
    closed: bool = False
    """The server closed the connection (EOF or reset)."""

    @property
    def goaway(self) -> GoAwayFrame | None:
        return next((f for f in self.frames if isinstance(f, GoAwayFrame)), None)

    @property
    def goaway_code(self) -> str | None:
        frame = self.goaway
        return None if frame is None else _code_name(frame.error_code)

    def resets(self, stream_id: int | None = None) -> list[str]:
        return [_code_name(f.error_code) for f in self.frames
                if isinstance(f, RstStreamFrame) and stream_id in (None, f.stream_id)]

    def statuses(self, stream_id: int) -> list[int]:
        """The ``:status`` of every response header block the server sent on the stream."""
        return [int(value) for sid, fields in self.headers if sid == stream_id
                for name, value in fields if name == b":status"]


def _code_name(code: int) -> str:
    try:
        return ErrorCodes(code).name
    except ValueError:
        return hex(code)


class RawH2:
    """``raw = await RawH2.open(host, port, ctx)``; ``await raw.send(frames)``; ``await raw.read_until(...)``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.received = Received()
        self.ack_settings = True
        self._buffer = b""

    @classmethod
    async def open(cls, host: str, port: int, context: ssl.SSLContext, *, timeout_s: float = 10.0,
                   preface: bool = True) -> RawH2:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context, server_hostname=host), timeout_s)
        raw = cls(reader, writer)
        raw.ack_settings = preface  # a client that sent no preface must not send frames either
        if preface:
            await raw.send_bytes(PREFACE + SettingsFrame(0).serialize())
        return raw

    async def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, frames: Iterable[Frame]) -> None:
        await self.send_bytes(b"".join(frame.serialize() for frame in frames))

    def request(self, stream_id: int, method: str, path: str, *, authority: str = "127.0.0.1",
                content_length: int | None = None, end_stream: bool = False,
                extra: Sequence[tuple[str, str]] = ()) -> HeadersFrame:
        """A complete request HEADERS frame (HPACK-encoded with this connection's encoder)."""
        headers = [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path)]
        if content_length is not None:
            headers.append(("content-length", str(content_length)))
        headers.extend(extra)
        flags = ["END_HEADERS", *(["END_STREAM"] if end_stream else [])]
        return HeadersFrame(stream_id, self.encoder.encode(headers), flags=flags)

    @staticmethod
    def open_header_block(stream_id: int, block: bytes) -> HeadersFrame:
        """A HEADERS frame without END_HEADERS: the server must wait for CONTINUATION."""
        return HeadersFrame(stream_id, block)

    @staticmethod
    def continuation(stream_id: int, block: bytes, *, end: bool = False) -> ContinuationFrame:
        return ContinuationFrame(stream_id, block, flags=["END_HEADERS"] if end else [])

    @staticmethod
    def data(stream_id: int, payload: bytes = b"", *, end_stream: bool = False) -> DataFrame:
        return DataFrame(stream_id, payload, flags=["END_STREAM"] if end_stream else [])

    @staticmethod
    def rst(stream_id: int, code: ErrorCodes = ErrorCodes.CANCEL) -> RstStreamFrame:
        return RstStreamFrame(stream_id, int(code))

    @staticmethod
    def ping(opaque: bytes = b"\x00" * 8) -> PingFrame:
        return PingFrame(0, opaque)

    @staticmethod
    def settings(values: dict[int, int] | None = None) -> SettingsFrame:
        return SettingsFrame(0, values or {})

    @staticmethod
    def window_update(stream_id: int, increment: int) -> WindowUpdateFrame:
        return WindowUpdateFrame(stream_id, increment)

    async def settle(self, *, timeout_s: float = 10.0) -> None:
        """Wait for the server's SETTINGS (and so have acknowledged them): later frames stay in sequence."""
        await self.read_until(lambda r: any(isinstance(f, SettingsFrame) for f in r.frames), timeout_s=timeout_s)

    async def read_until(self, done: object = None, *, timeout_s: float) -> Received:
        """Read the server's frames until ``done(received)`` holds, the server closes, or the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        check = done if callable(done) else (lambda received: False)
        while not self.received.closed and not check(self.received):
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                chunk = await asyncio.wait_for(self.reader.read(65536), remaining)
            except TimeoutError:
                break
            except (ConnectionError, ssl.SSLError):
                chunk = b""
            if not chunk:
                self.received.closed = True
                break
            self._parse(chunk)
        return self.received

    def _parse(self, chunk: bytes) -> None:
        self._buffer += chunk
        while len(self._buffer) >= FRAME_HEADER:
            frame, length = Frame.parse_frame_header(memoryview(self._buffer[:FRAME_HEADER]))
            if len(self._buffer) < FRAME_HEADER + length:
                return
            frame.parse_body(memoryview(self._buffer[FRAME_HEADER:FRAME_HEADER + length]))
            self._buffer = self._buffer[FRAME_HEADER + length:]
            self.received.frames.append(frame)
            if isinstance(frame, HeadersFrame):
                with contextlib.suppress(hpack.HPACKError):
                    fields = [(bytes(n), bytes(v)) for n, v in self.decoder.decode(frame.data, raw=True)]
                    self.received.headers.append((frame.stream_id, fields))
            if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags and self.ack_settings:
                self.writer.write(SettingsFrame(0, flags=["ACK"]).serialize())

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)


__all__ = ["PREFACE", "RawH2", "Received"]
