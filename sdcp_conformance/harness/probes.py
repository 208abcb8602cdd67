"""Raw TLS probes of the IUT's listener, built on :mod:`ssl` alone (§5.1, P1-TLS-1).

The harness's HTTP/2 client only ever offers what a correct party offers
(TLS 1.3, ALPN ``h2``), so it cannot show what the IUT does with a TLS 1.2
client or an HTTP/1.1 request. These probes shape the handshake themselves,
send raw bytes and report what came back — shared with nothing in
``transport/``, so a bug there cannot hide one in the IUT.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

PROBE_TIMEOUT_S = 5.0
"""Bounds the handshake and the whole read; a silent IUT is reported as such, never waited on."""

MAX_READ = 1 << 20


@dataclass(frozen=True)
class TlsOffer:
    """What the probing client offers: its certificate, TLS versions and ALPN protocols."""

    cert: Path | None
    key: Path | None
    max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    alpn: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeResult:
    """How the exchange went: ``handshake_ok``, the negotiated parameters and the bytes read back."""

    handshake_ok: bool
    tls_version: str | None
    alpn: str | None
    data: bytes
    closed: bool
    """The IUT closed the connection (EOF, reset or alert) before the read deadline."""
    detail: str

    @property
    def http1_status(self) -> int | None:
        """The status code if the reply starts like an HTTP/1.x status line."""
        head = self.data.split(b"\r\n", 1)[0].split()
        if len(head) >= 2 and head[0].startswith(b"HTTP/1.") and head[1].isdigit():
            return int(head[1])
        return None

    def describe(self) -> str:
        if not self.handshake_ok:
            return f"handshake refused ({self.detail})"
        first = self.data.split(b"\r\n", 1)[0][:80].decode("latin-1")
        reply = f"reply {first!r}" if self.data else "no reply bytes"
        end = "connection closed" if self.closed else "connection left open"
        return f"TLS {self.tls_version}, ALPN {self.alpn!r}, {reply}, {end} ({self.detail})".rstrip(" ()")


def client_context(ca: Path, offer: TlsOffer) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=ca)
    ctx.minimum_version = offer.min_version
    ctx.maximum_version = offer.max_version
    if offer.cert is not None:
        ctx.load_cert_chain(offer.cert, offer.key)
    if offer.alpn:
        ctx.set_alpn_protocols(list(offer.alpn))
    return ctx


async def tls_probe(base_uri: str, ca: Path, offer: TlsOffer, payload: bytes = b"", *, read: bool = True,
                    timeout_s: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Connect to the IUT's base URI with ``offer``, send ``payload`` and read until EOF or the deadline.

    With ``read=False`` only the handshake is judged: the connection is closed
    as soon as it is up (nothing is sent or read).

    With TLS 1.3 a server checks the client certificate after the client has
    finished its side of the handshake, so a refusal may only show on the
    first read (an alert, a reset or EOF); such a connection counts as
    refused when it yields no application bytes at all.
    """
    parts = urlsplit(base_uri)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=client_context(ca, offer), server_hostname=host),
            timeout_s)
    except (ssl.SSLError, OSError, TimeoutError) as exc:
        return ProbeResult(False, None, None, b"", True, f"{type(exc).__name__}: {exc}")
    ssl_object = writer.get_extra_info("ssl_object")
    version = ssl_object.version() if ssl_object is not None else None
    alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
    try:
        if not read:
            return ProbeResult(True, version, alpn, b"", False, "")
        data, closed, detail = await _exchange(reader, writer, payload, timeout_s)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1.0)
    if not data and closed and detail:
        return ProbeResult(False, version, alpn, b"", True, detail)
    return ProbeResult(True, version, alpn, data, closed, detail)


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, payload: bytes,
                    timeout_s: float) -> tuple[bytes, bool, str]:
    """Send, then read until EOF or the deadline: (bytes, closed, why it ended if not a clean EOF)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    chunks: list[bytes] = []
    try:
        if payload:
            writer.write(payload)
            await writer.drain()
        while sum(map(len, chunks)) < MAX_READ:
            chunk = await asyncio.wait_for(reader.read(65536), max(0.0, deadline - loop.time()))
            if not chunk:
                return b"".join(chunks), True, ""
            chunks.append(chunk)
    except TimeoutError:
        return b"".join(chunks), False, "read deadline passed"
    except (ssl.SSLError, OSError) as exc:
        return b"".join(chunks), True, f"{type(exc).__name__}: {exc}"
    return b"".join(chunks), False, "read limit reached"


def http1_request(base_uri: str, method: str, path: str, body: bytes, content_type: str) -> bytes:
    """An HTTP/1.1 request for ``path`` below the base URI, with ``connection: close``."""
    parts = urlsplit(base_uri)
    target = parts.path.rstrip("/") + "/" + path
    head = (f"{method} {target} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: {content_type}\r\n"
            f"accept: {content_type}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body


__all__ = ["MAX_READ", "PROBE_TIMEOUT_S", "ProbeResult", "TlsOffer", "client_context", "http1_request", "tls_probe"]
