"""A lean asyncio HTTP/2 client on h2 for the harness's high-volume traffic.

Measured (benchmarks/bench_transport.py): httpx spends most of a small
request in its own layers, several times the cost of the request itself on
one TLS 1.3 connection. The statistical suites send tens of thousands of
rounds, so they use this client: one connection, many concurrent streams,
same TLS profile (:mod:`.tls`), same :class:`~.client.ClientResponse`,
retries and failure kinds as :class:`~.client.SdcpClient`. It also knows
precisely when a client certificate was refused: :meth:`H2Client.connect`
waits for the server's SETTINGS frame, which a refusing server never sends.

Hot path (profiled): h2 normalises and validates every outbound header list
and hpack re-encodes it, although the harness sends the same few lists again
and again. So the client normalises and validates a list once, with h2's own
functions and result (:meth:`H2Client._request_headers`), and tells h2 not to
redo it; the HPACK encoder reuses the block of a list it already encoded as
long as the dynamic table is as it was (:class:`_ReusingEncoder`), and the
decoder likewise the fields of a response header block it already decoded
(:class:`_ReusingDecoder`). The bytes on the wire are the same. Inbound
headers (the peer under test) are still validated by h2.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hpack
from h2.errors import ErrorCodes
from h2.utilities import HeaderValidationFlags, normalize_outbound_headers, validate_outbound_headers
from hpack.struct import Header
from hpack.table import HeaderTable

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.client import (
    MAX_ATTEMPTS,
    ClientResponse,
    FailureKind,
    Timeouts,
    TransportFailure,
    is_retry_safe,
    send_with_retries,
)
from sdcp_conformance.transport.tls import ALPN_H2, client_ssl_context

MAX_STREAMS = 100
"""D-H2C-1: concurrent streams per connection, RFC 9113 §6.5.2's recommended minimum."""
RECEIVE_WINDOW = 16 << 20
HEADER_CACHE_SIZE = 256
"""Distinct request header lists (method, path, length, headers) kept normalised and validated."""
HPACK_MEMO_SIZE = 256
"""Header blocks each HPACK encoder and decoder remembers while its dynamic table is unchanged."""

_REQUEST_FLAGS = HeaderValidationFlags(
    is_client=True, is_trailer=False, is_response_header=False, is_push_promise=False
)
"""What h2 validates a client's initial HEADERS against (not trailers, not a response, not a push)."""

_EncoderInput: TypeAlias = (
    "Iterable[hpack.HeaderTuple | tuple[bytes | str, bytes | str] | tuple[bytes | str, bytes | str, bool | None]]"
    " | dict[bytes | str, bytes | str]"
)


def _h2_config() -> h2.config.H2Configuration:
    # Outbound headers come normalised and validated from H2Client._request_headers; inbound ones
    # (what the peer under test sends) are still validated by h2.
    return h2.config.H2Configuration(
        client_side=True,
        header_encoding=None,
        normalize_outbound_headers=False,
        validate_outbound_headers=False,
    )


class _TableMark:
    """What an HPACK dynamic table looked like, to tell later whether it changed.

    Entries are only ever added at the front (a new tuple) and evicted from the
    back, so every insertion or eviction changes the number of entries or the
    identity of the front one; a resize changes ``maxsize``.
    """

    __slots__ = ("front", "maxsize", "size")

    def __init__(self) -> None:
        self.size, self.maxsize = -1, -1
        self.front: object = None

    def matches(self, table: HeaderTable) -> bool:
        entries = table.dynamic_entries
        if len(entries) != self.size or table.maxsize != self.maxsize:
            return False
        return not entries or entries[0] is self.front

    def take(self, table: HeaderTable) -> None:
        entries = table.dynamic_entries
        self.size, self.front, self.maxsize = len(entries), entries[0] if entries else None, table.maxsize


class _ReusingEncoder(hpack.Encoder):
    """An HPACK encoder that reuses a header block while the dynamic table is unchanged.

    A block depends only on the header list and the dynamic table. When encoding
    a list leaves the table as it was (every field indexed, or never indexed), the
    same list encodes to the same bytes until the table changes or a size update
    is pending (``resized``). The memo is keyed on the list and its tuples' types
    (a never-indexed field equals a plain tuple) and dropped when the table changes.
    """

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[tuple[Any, ...], bytes] = {}
        self._mark = _TableMark()

    def encode(self, headers: _EncoderInput, huffman: bool = True) -> bytes:
        if isinstance(headers, dict):
            return super().encode(headers, huffman)
        fields = tuple(headers)
        key = (huffman, fields, tuple(map(type, fields)))
        table = self.header_table
        unchanged = not table.resized and self._mark.matches(table)
        if unchanged:
            block = self._memo.get(key)
            if block is not None:
                return block
        block = super().encode(fields, huffman)
        if unchanged and self._mark.matches(table):
            if len(self._memo) >= HPACK_MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = block
        else:
            self._memo.clear()
            self._mark.take(table)
        return block


class _ReusingDecoder(hpack.Decoder):
    """An HPACK decoder that reuses the fields of a header block while the dynamic table is unchanged.

    The mirror of :class:`_ReusingEncoder`: a block whose decoding left the table
    as it was (every field indexed, or not indexed) decodes to the same fields
    until the table changes. The limits the decoder checks are part of the key.
    """

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[tuple[Any, ...], tuple[hpack.HeaderTuple, ...]] = {}
        self._mark = _TableMark()

    def decode(self, data: bytes, raw: bool = False) -> Iterable[hpack.HeaderTuple]:
        key = (bytes(data), raw, self.max_header_list_size, self.max_allowed_table_size)
        table = self.header_table
        unchanged = self._mark.matches(table)
        if unchanged:
            cached = self._memo.get(key)
            if cached is not None:
                return list(cached)
        fields = list(super().decode(data, raw))
        if unchanged and self._mark.matches(table):
            if len(self._memo) >= HPACK_MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = tuple(fields)
        else:
            self._memo.clear()
            self._mark.take(table)
        return fields


class _Stream:
    __slots__ = ("body", "done", "headers", "status", "window_open")

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.body: list[bytes] = []
        self.window_open: asyncio.Event | None = None
        """Created by an upload that waits for flow-control credit."""


class _Connection(asyncio.Protocol):
    """One TLS connection and the h2 state of its streams."""

    def __init__(self) -> None:
        self.h2 = h2.connection.H2Connection(_h2_config())
        self.h2.encoder = _ReusingEncoder()
        self.h2.decoder = _ReusingDecoder()
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, _Stream] = {}
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.ready: asyncio.Future[None] = loop.create_future()
        self.usable = True
        self.failure: TransportFailure | None = None
        self._flush_pending = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != ALPN_H2:
            self._fail(TransportFailure(FailureKind.NOT_HTTP2, "the server did not select h2"))
            transport.close()
            return
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(RECEIVE_WINDOW - 65535)
        self.flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            self.flush()
            self._fail(TransportFailure(FailureKind.CONNECTION_LOST, f"h2 error: {exc}"))
            self.close()
            return
        for event in events:
            self._dispatch(event)
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        kind = FailureKind.CONNECTION_LOST if self.ready.done() else FailureKind.REFUSED
        reason = f"{type(exc).__name__}: {exc}" if exc else "closed by the peer"
        self._fail(TransportFailure(kind, f"connection lost ({reason})"))

    def _dispatch(self, event: h2.events.Event) -> None:
        # The three events of every response first.
        if isinstance(event, h2.events.DataReceived):
            stream = self.streams.get(event.stream_id)
            if stream is not None and event.data:
                stream.body.append(event.data)
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.ResponseReceived):
            self._on_headers(event)
        elif isinstance(event, h2.events.StreamEnded):
            self._finish(event.stream_id, None)
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            if not self.ready.done():
                self.ready.set_result(None)
        elif isinstance(event, h2.events.StreamReset):
            code = ErrorCodes(event.error_code) if event.error_code is not None else "?"
            lost = TransportFailure(FailureKind.CONNECTION_LOST, f"stream reset ({code})")
            self._finish(event.stream_id, lost)
        elif isinstance(event, h2.events.WindowUpdated):
            self._wake(event.stream_id)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._on_goaway(event)

    def _on_headers(self, event: h2.events.ResponseReceived) -> None:
        stream = self.streams.get(event.stream_id)
        if stream is None:
            return
        for raw_name, raw_value in event.headers or ():
            name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
            if name == ":status":
                stream.status = int(value)
            else:
                stream.headers.append((name, value))

    def _on_goaway(self, event: h2.events.ConnectionTerminated) -> None:
        """GOAWAY: no new streams here; streams above last_stream_id were never processed."""
        self.usable = False
        last = event.last_stream_id if event.last_stream_id is not None else 0
        for stream_id in [sid for sid in self.streams if sid > last]:
            self._finish(stream_id, TransportFailure(FailureKind.CONNECTION_LOST, "GOAWAY"))

    def _finish(self, stream_id: int, failure: TransportFailure | None) -> None:
        stream = self.streams.pop(stream_id, None)
        if stream is None or stream.done.done():
            return
        if failure is None:
            stream.done.set_result(None)
        else:
            stream.done.set_exception(failure)
        if stream.window_open is not None:
            stream.window_open.set()

    def _wake(self, stream_id: int) -> None:
        targets = self.streams.values() if stream_id == 0 else [self.streams.get(stream_id)]
        for stream in targets:
            if stream is not None and stream.window_open is not None:
                stream.window_open.set()

    def _fail(self, failure: TransportFailure) -> None:
        self.usable = False
        self.failure = self.failure or failure
        if not self.ready.done():
            self.ready.set_exception(failure)
        for stream_id in list(self.streams):
            self._finish(stream_id, failure)

    def cancel(self, stream_id: int) -> None:
        """Give up on a stream (timeout): RST_STREAM(CANCEL) and forget it."""
        self.streams.pop(stream_id, None)
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.h2.reset_stream(stream_id, ErrorCodes.CANCEL)
        self.flush()

    def flush_soon(self) -> None:
        """Coalesce the frames of all streams started in this loop iteration into one write."""
        if not self._flush_pending:
            self._flush_pending = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_pending = False
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        self.usable = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class H2Client:
    """``async with H2Client(base_uri, cert, key, ca) as c: await c.request("POST", "proposals", b)``."""

    def __init__(
        self,
        base_uri: str,
        cert: Path | None,
        key: Path | None,
        ca: Path,
        *,
        timeouts: Timeouts | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        parts = urlsplit(base_uri)
        if parts.scheme != "https" or parts.hostname is None or parts.port is None:
            raise InvalidArgument(f"base URI {base_uri!r} needs https, a host and a port")
        self.base_uri = base_uri if base_uri.endswith("/") else base_uri + "/"
        self._host, self._port = parts.hostname, parts.port
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/") + "/"
        self._ssl: ssl.SSLContext = client_ssl_context(cert, key, ca)
        self.timeouts = timeouts or Timeouts()
        self.max_attempts = max_attempts
        self._connection: _Connection | None = None
        self._connecting = asyncio.Lock()
        self._slots = asyncio.Semaphore(MAX_STREAMS)
        self._header_lists: dict[tuple[Any, ...], tuple[Header, ...]] = {}
        self.connections_opened = 0

    async def __aenter__(self) -> H2Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                connection.h2.close_connection()
                connection.flush()
            connection.close()

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: dict[str, str] | None = None,
        retry: bool | None = None,
    ) -> ClientResponse:
        """Like :meth:`SdcpClient.request`: retried where the draft makes it safe."""
        retry = is_retry_safe(method, "/" + path.lstrip("/")) if retry is None else retry
        attempts = self.max_attempts if retry else 1
        return await send_with_retries(lambda: self._attempt(method, path, body or b"", headers), attempts=attempts)

    async def connect(self) -> None:
        """Open the connection now (requests otherwise open it on demand)."""
        await self._usable_connection()

    async def _attempt(self, method: str, path: str, body: bytes, headers: dict[str, str] | None) -> ClientResponse:
        deadline = min(self.timeouts.total, self.timeouts.connect + self.timeouts.read)
        connection, stream_id = None, 0
        try:
            async with asyncio.timeout(deadline), self._slots:
                connection = await self._usable_connection()
                stream_id, stream = self._open_stream(connection, method, path, body, headers)
                await self._upload(connection, stream_id, stream, body)
                await stream.done
        except TimeoutError as exc:
            if connection is not None and stream_id:
                connection.cancel(stream_id)
            raise TransportFailure(FailureKind.TIMEOUT, f"{method} {path}: timed out") from exc
        return ClientResponse(stream.status, tuple(stream.headers), b"".join(stream.body))

    async def _usable_connection(self) -> _Connection:
        connection = self._connection
        if connection is not None and connection.usable:
            return connection  # the hot path: no lock
        async with self._connecting:
            if self._connection is None or not self._connection.usable:
                if self._connection is not None:
                    self._connection.close()
                self._connection = None
                self._connection = await self._open()
            return self._connection

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeouts.connect):
                _, connection = await loop.create_connection(
                    _Connection, self._host, self._port, ssl=self._ssl,
                    server_hostname=self._host,
                )  # fmt: skip
                await connection.ready  # the server's SETTINGS: it accepted our certificate
        except TimeoutError as exc:
            raise TransportFailure(FailureKind.TIMEOUT, "connect timed out") from exc
        except (ssl.SSLError, OSError) as exc:
            raise TransportFailure(FailureKind.REFUSED, f"{type(exc).__name__}: {exc}") from exc
        self.connections_opened += 1
        return connection

    def _open_stream(
        self,
        connection: _Connection,
        method: str,
        path: str,
        body: bytes,
        headers: dict[str, str] | None,
    ) -> tuple[int, _Stream]:
        if connection.failure is not None:
            raise connection.failure
        request_headers = self._request_headers(method, path, len(body), headers)
        stream_id = connection.h2.get_next_available_stream_id()
        stream = _Stream(connection.loop.create_future())
        connection.streams[stream_id] = stream
        connection.h2.send_headers(stream_id, request_headers, end_stream=not body)
        connection.flush_soon()
        return stream_id, stream

    def _request_headers(
        self, method: str, path: str, length: int, headers: dict[str, str] | None
    ) -> tuple[Header, ...]:
        """The request's header list, normalised and validated as h2 would, once per distinct list.

        h2's own functions do it (lower-case names, strip whitespace, drop
        connection-specific fields, never index authorization and short cookies,
        then reject what RFC 9113 forbids), so a bad list raises the same
        ProtocolError as before, only before a stream is opened.
        """
        key = (method, path, length, tuple(headers.items()) if headers else ())
        cached = self._header_lists.get(key)
        if cached is not None:
            return cached
        raw = [
            (":method", method),
            (":scheme", "https"),
            (":authority", self._authority),
            (":path", self._prefix + path.lstrip("/")),
            ("content-length", str(length)),
            *((name.lower(), value) for name, value in (headers or {}).items()),
        ]
        encoded = [(name.encode(), value.encode()) for name, value in raw]  # UTF-8, as h2 and hpack do
        normalised = normalize_outbound_headers(encoded, _REQUEST_FLAGS)  # no cookie splitting: h2's default
        checked = tuple(validate_outbound_headers(normalised, _REQUEST_FLAGS))
        if len(self._header_lists) >= HEADER_CACHE_SIZE:
            del self._header_lists[next(iter(self._header_lists))]  # the oldest
        self._header_lists[key] = checked
        return checked

    async def _upload(self, connection: _Connection, stream_id: int, stream: _Stream, body: bytes) -> None:
        """Send the body within the flow-control windows; an early answer (413) ends it."""
        h2conn = connection.h2
        view = memoryview(body)
        while view and not stream.done.done():
            window = min(h2conn.local_flow_control_window(stream_id), h2conn.max_outbound_frame_size)
            if window <= 0:
                connection.flush()
                if stream.window_open is None:
                    stream.window_open = asyncio.Event()
                stream.window_open.clear()
                await stream.window_open.wait()
                continue
            chunk, view = view[:window], view[window:]
            try:
                h2conn.send_data(stream_id, bytes(chunk), end_stream=not view)
            except h2.exceptions.StreamClosedError:
                break  # the server answered and reset the stream: the answer stands
        if view and stream.done.done():
            # Answered before the upload ended: tell the server we stop (RFC 9113 §8.1).
            with contextlib.suppress(h2.exceptions.ProtocolError):
                h2conn.reset_stream(stream_id, ErrorCodes.NO_ERROR)
        connection.flush_soon()


__all__ = ["MAX_STREAMS", "H2Client"]
