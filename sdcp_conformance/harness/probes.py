"""Raw TLS probes of the IUT's listener, built on :mod:`ssl` alone (§5.1, P1-TLS-1).

The harness's HTTP/2 client only ever offers what a correct party offers
(TLS 1.3, ALPN ``h2``), so it cannot show what the IUT does with a TLS 1.2
client or an HTTP/1.1 request. These probes shape the handshake themselves,
send raw bytes and report what came back — shared with nothing in
``transport/``, so a bug there cannot hide one in the IUT.

P1-JUDGE-3: "A timeout is never a refusal: a handshake that hangs is not a
handshake that was refused." So a probe tells four outcomes apart
(:class:`ProbeOutcome`): the TCP connection was not accepted; TCP connected
but the handshake stalled until the deadline; the handshake was refused (a
TLS alert — by name —, a reset, or EOF, during the handshake or right after
it with no application bytes, which is how TLS 1.3 refuses a client
certificate); or it completed.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

PROBE_TIMEOUT_S = 5.0
"""Bounds the TCP connect, the handshake and the whole read; a silent IUT is reported as such, never waited on."""

MAX_READ = 1 << 20


class ProbeOutcome(enum.Enum):
    UNREACHABLE = "unreachable"
    """The TCP connection was refused or not accepted before the deadline. D-PRB-1: no refusal either — a
    listener that is not there refused nothing, so a case requiring a refused handshake fails."""
    STALLED = "stalled"
    """TCP connected, but the TLS handshake did not complete before the deadline."""
    REFUSED = "refused"
    """The handshake failed with an alert, a reset or EOF (or the connection ended so right after it)."""
    COMPLETED = "completed"


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
    """How the exchange went: the outcome, the negotiated parameters and the bytes read back."""

    outcome: ProbeOutcome
    tls_version: str | None
    alpn: str | None
    data: bytes
    closed: bool
    """The IUT closed the connection (EOF, reset or alert) before the read deadline."""
    detail: str
    alert: str | None = None
    """The TLS alert the IUT sent, as RFC 8446 names it (``protocol_version``), if it sent one."""
    elapsed_s: float = 0.0

    @property
    def handshake_ok(self) -> bool:
        return self.outcome is ProbeOutcome.COMPLETED

    @property
    def refused(self) -> bool:
        return self.outcome is ProbeOutcome.REFUSED

    @property
    def stalled(self) -> bool:
        return self.outcome is ProbeOutcome.STALLED

    @property
    def server_certificate_rejected(self) -> bool:
        """The handshake failed because the probing client (the harness) could not verify the IUT's certificate
        against the CA: the harness refused the IUT, not the other way round."""
        return self.refused and self.detail.startswith(ssl.SSLCertVerificationError.__name__)

    @property
    def http1_status(self) -> int | None:
        """The status code if the reply starts like an HTTP/1.x status line."""
        head = self.data.split(b"\r\n", 1)[0].split()
        if len(head) >= 2 and head[0].startswith(b"HTTP/1.") and head[1].isdigit():
            return int(head[1])
        return None

    def refusal_problem(self, completed: str) -> str | None:
        """``None`` if the handshake was refused; otherwise why this is no refusal (``completed`` when it
        completed), for a case that requires one."""
        if self.outcome is ProbeOutcome.REFUSED:
            return None
        if self.outcome is ProbeOutcome.STALLED:
            return (f"the handshake hung: TCP connected, then no handshake within {self.elapsed_s:.1f} s "
                    f"({self.detail}); a handshake that hangs is not a handshake that was refused (P1-JUDGE-3)")
        if self.outcome is ProbeOutcome.UNREACHABLE:
            return f"the IUT's listener did not accept the TCP connection ({self.detail}), so nothing was refused"
        return completed

    def describe(self) -> str:
        if self.outcome is ProbeOutcome.REFUSED:
            alert = f"alert {self.alert}" if self.alert else "no alert"
            return f"handshake refused ({alert}; {self.detail})"
        if self.outcome is ProbeOutcome.STALLED:
            return f"handshake stalled after TCP connect ({self.detail})"
        if self.outcome is ProbeOutcome.UNREACHABLE:
            return f"TCP connection not accepted ({self.detail})"
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


def alert_of(error: BaseException) -> str | None:
    """The alert named by an OpenSSL error (``TLSV1_ALERT_PROTOCOL_VERSION`` → ``protocol_version``)."""
    reason = getattr(error, "reason", None) or ""
    return reason.split("ALERT_", 1)[1].lower() if "ALERT_" in reason else None


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
    loop = asyncio.get_running_loop()
    started = time.monotonic()

    def result(outcome: ProbeOutcome, detail: str, *, version: str | None = None, alpn: str | None = None,
               data: bytes = b"", closed: bool = True, alert: str | None = None) -> ProbeResult:
        return ProbeResult(outcome, version, alpn, data, closed, detail, alert=alert,
                           elapsed_s=time.monotonic() - started)

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.wait_for(loop.sock_connect(sock, (host, port)), timeout_s)
    except (OSError, TimeoutError) as exc:
        sock.close()
        return result(ProbeOutcome.UNREACHABLE, f"{type(exc).__name__}: {exc}")
    remaining = max(0.1, timeout_s - (time.monotonic() - started))
    reader = asyncio.StreamReader(loop=loop)
    protocol = _Opening(reader, loop=loop)
    try:
        transport, _ = await asyncio.wait_for(
            loop.create_connection(lambda: protocol, sock=sock, ssl=client_context(ca, offer), server_hostname=host,
                                   ssl_handshake_timeout=remaining + 1.0), remaining)
    except TimeoutError:
        protocol.abandon(sock)
        return result(ProbeOutcome.STALLED, f"no TLS handshake within {timeout_s:g} s")
    except (ssl.SSLError, OSError) as exc:
        protocol.abandon(sock)
        return result(ProbeOutcome.REFUSED, f"{type(exc).__name__}: {exc}", alert=alert_of(exc))
    except BaseException:
        protocol.abandon(sock)
        raise
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    ssl_object = writer.get_extra_info("ssl_object")
    version = ssl_object.version() if ssl_object is not None else None
    alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
    try:
        if not read:
            return result(ProbeOutcome.COMPLETED, "", version=version, alpn=alpn, closed=False)
        data, closed, detail, alert = await _exchange(reader, writer, payload, timeout_s)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1.0)
    if not data and closed and detail:
        return result(ProbeOutcome.REFUSED, detail, version=version, alpn=alpn, alert=alert)
    return result(ProbeOutcome.COMPLETED, detail, version=version, alpn=alpn, data=data, closed=closed)


class _Opening(asyncio.StreamReaderProtocol):
    """``asyncio.open_connection``'s protocol, keeping the transport its handshake made for :meth:`abandon`."""

    transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        super().connection_made(transport)

    def abandon(self, sock: socket.socket) -> None:
        """Drop an opening that failed or ran out of time: the transport first, then the socket.

        A deadline that fires just after the handshake completed leaves asyncio *closing* the TLS transport (a
        close_notify exchange holding the socket for up to 30 s); closing ``sock`` under it would hand its
        descriptor number to the next socket, which asyncio then refuses as "used by transport".
        """
        if self.transport is not None:
            self.transport.abort()
        sock.close()


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, payload: bytes,
                    timeout_s: float) -> tuple[bytes, bool, str, str | None]:
    """Send, then read until EOF or the deadline: (bytes, closed, why it ended if not a clean EOF, alert)."""
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
                return b"".join(chunks), True, "", None
            chunks.append(chunk)
    except TimeoutError:
        return b"".join(chunks), False, "read deadline passed", None
    except (ssl.SSLError, OSError) as exc:
        return b"".join(chunks), True, f"{type(exc).__name__}: {exc}", alert_of(exc)
    return b"".join(chunks), False, "read limit reached", None


def http1_request(base_uri: str, method: str, path: str, body: bytes, content_type: str) -> bytes:
    """An HTTP/1.1 request for ``path`` below the base URI, with ``connection: close``."""
    parts = urlsplit(base_uri)
    target = parts.path.rstrip("/") + "/" + path
    head = (f"{method} {target} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: {content_type}\r\n"
            f"accept: {content_type}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body


__all__ = [
    "MAX_READ",
    "PROBE_TIMEOUT_S",
    "ProbeOutcome",
    "ProbeResult",
    "TlsOffer",
    "alert_of",
    "client_context",
    "http1_request",
    "tls_probe",
]
