"""TLS contexts for SDCP: TLS 1.3 only, ALPN ``h2`` only, mutual certificates (§5.1, P1-TLS-1).

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual
certificate authentication is REQUIRED."
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

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
    if not peercert:
        return None
    uris = [value for kind, value in peercert.get("subjectAltName", ()) if kind == "URI"]
    return uris[0] if len(uris) == 1 else None


def _tls13_h2(ctx: ssl.SSLContext) -> None:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols([ALPN_H2])


__all__ = ["ALPN_H2", "client_ssl_context", "peer_uri_san", "server_ssl_context"]
