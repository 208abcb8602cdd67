"""TLS contexts for SDCP: TLS 1.3 only, ALPN ``h2`` only, mutual certificates (§5.1, P1-TLS-1).

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual
certificate authentication is REQUIRED."
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from asyncio import sslproto
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ALPN_H2 = "h2"


def server_ssl_context(cert: Path, key: Path, ca: Path, *, require_client_cert: bool = True) -> ssl.SSLContext:
    """A server context that speaks TLS 1.3 only and, by default, demands a client certificate.

    ``require_client_cert=False`` exists only so that tools without client
    certificates (h2load in the benchmark) can reach the same server.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _tls13_h2(ctx)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(cafile=ca)
    ctx.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_NONE
    return ctx


def client_ssl_context(cert: Path | None, key: Path | None, ca: Path) -> ssl.SSLContext:
    """A client context: TLS 1.3 only, ALPN ``h2``, server verified against ``ca`` and hostname.

    ``cert``/``key`` may be ``None`` only to test that a server refuses a
    client without a certificate.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _tls13_h2(ctx)
    ctx.load_verify_locations(cafile=ca)
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    return ctx


def peer_uri_san(peercert: dict[str, Any] | None) -> str | None:
    """The URI SAN of a peer certificate as ``ssl`` reports it (P1-ID-1).

    D-TLS-1: a certificate with several URI SANs identifies no party (an
    identity must be one base URI), so this returns ``None`` for it as for none.
    """
    uris = peer_uri_sans(peercert)
    return uris[0] if len(uris) == 1 else None


def peer_uri_sans(peercert: dict[str, Any] | None) -> tuple[str, ...]:
    """Every URI SAN of a peer certificate as ``ssl`` reports it, in order (none for no certificate)."""
    return tuple(str(value) for kind, value in (peercert or {}).get("subjectAltName", ()) if kind == "URI")


def names_party(uri_sans: tuple[str, ...], base_uri: str) -> bool:
    """D-TLS-3: whether a certificate with these URI SANs identifies the party at ``base_uri`` (P1-ID-1): exactly
    one URI SAN (D-TLS-1), equal to the base URI; scheme and host compare case-insensitively (RFC 3986 §6.2.2.1),
    the port, path and trailing ``/`` as written."""
    return len(uri_sans) == 1 and _comparable(uri_sans[0]) == _comparable(base_uri)


def _comparable(uri: str) -> tuple[str, str, str, str, str]:
    parts = urlsplit(uri)
    return parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment


class AlertingServerTls(sslproto.SSLProtocol):
    """D-TLS-2: asyncio's server-side TLS, except that a failed handshake's alert reaches the client.

    asyncio closes the socket on a failed handshake before writing what OpenSSL
    queued, so a client whose certificate the server refused (TLS 1.3 alerts
    ``certificate_required``, ``unknown_ca``, ``certificate_expired``) or that
    offered only TLS 1.2 (``protocol_version``) sees a bare EOF and cannot tell
    a refusal from a crash. Writing the queued bytes first (a single small
    record, sent at once on an idle socket) gives it the alert, as OpenSSL's
    own servers do. Built on asyncio's TLS protocol (``asyncio.sslproto``,
    Python ≥ 3.11); use :func:`serve_tls` to create a server with it.
    """

    max_size = 32 * 1024
    """asyncio gives every TLS connection a 256 KiB read buffer from the moment it is accepted: 75 MiB for 300
    idle connections. 32 KiB (two HTTP/2 frames of the default size) reads SDCP's messages as well; measured,
    300 idle connections then cost the server 29 MiB instead of 90 (bench_server_attacks.py)."""

    on_failed: Callable[[BaseException | type[BaseException]], None] | None = None
    """Told of each failed handshake (the server's record of the clients it refused)."""

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        if handshake_exc is not None:
            if self.on_failed is not None:  # before the alert goes out: whoever reads it finds the record made
                self.on_failed(handshake_exc)
            with contextlib.suppress(Exception):  # best effort: the handshake failed anyway
                self._process_outgoing()  # type: ignore[attr-defined]
        super()._on_handshake_complete(handshake_exc)


async def serve_tls(factory: Any, context: ssl.SSLContext, host: str, port: int, *, handshake_timeout: float,
                    shutdown_timeout: float,
                    on_handshake_failed: Callable[[BaseException | type[BaseException]], None] | None = None
                    ) -> asyncio.Server:
    """``loop.create_server(factory, host, port, ssl=context)`` with :class:`AlertingServerTls` as the TLS layer;
    ``on_handshake_failed`` is told of every handshake that failed."""
    loop = asyncio.get_running_loop()

    def tls_protocol() -> AlertingServerTls:
        # typeshed wants a waiter future and int timeouts; asyncio takes None (nobody waits) and seconds as floats.
        protocol = AlertingServerTls(loop, factory(), context, None, server_side=True,  # type: ignore[arg-type]
                                     ssl_handshake_timeout=handshake_timeout,  # type: ignore[arg-type]
                                     ssl_shutdown_timeout=shutdown_timeout)
        protocol.on_failed = on_handshake_failed
        return protocol

    return await loop.create_server(tls_protocol, host, port)


def _tls13_h2(ctx: ssl.SSLContext) -> None:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols([ALPN_H2])


__all__ = ["ALPN_H2", "AlertingServerTls", "client_ssl_context", "names_party", "peer_uri_san", "peer_uri_sans",
           "serve_tls", "server_ssl_context"]
