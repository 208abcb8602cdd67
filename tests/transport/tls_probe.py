"""A raw TLS probe: did a server accept a connection? Independent of any HTTP client."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes.fromhex("000000040000000000")
"""The HTTP/2 client preface followed by an empty SETTINGS frame."""
SETTINGS_FRAME_TYPE = 0x04


def client_context(
    ca: Path,
    cert: Path | None = None,
    key: Path | None = None,
    *,
    tls12_only: bool = False,
    alpn: list[str] | None = None,
) -> ssl.SSLContext:
    """A context built here with the ssl module alone, so the probe shares nothing with the code."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=ca)
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    if tls12_only:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


def probe(port: int, ctx: ssl.SSLContext, payload: bytes = PREFACE, *, until_eof: bool = False) -> tuple[str, bytes]:
    """Handshake, send ``payload``, read the reply: ("refused", b"") or ("answered", bytes).

    Reads one chunk, or everything until the server closes with ``until_eof``
    (the socket timeout of 5 s bounds both).

    With TLS 1.3 the server checks the client certificate after the client has
    finished its side of the handshake, so a refusal shows up as an alert, a
    reset or EOF on the first read; all of those count as "refused".
    """
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        try:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(payload)
                data = _read_all(tls) if until_eof else tls.recv(65536)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return "refused", b""
    return ("answered", data) if data else ("refused", b"")


def _read_all(tls: ssl.SSLSocket) -> bytes:
    chunks = [tls.recv(65536)]
    while chunks[-1]:
        chunks.append(tls.recv(65536))
    return b"".join(chunks)


def first_frame_type(data: bytes) -> int:
    return data[3]
