"""An httpx transport that sends every request through the project's HTTP/2 client.

The reference roles reach the MLC and the router through an
``httpx.AsyncClient`` (:func:`sdcp_conformance.reference.links.party_http_client`,
:class:`~sdcp_conformance.cache.clients.HttpxObjectClient`). httpcore drops
the answers a server still owes after a graceful GOAWAY (it fails every
stream once GOAWAY is seen; RFC 9113 §6.8 says streams up to
``last_stream_id`` complete), which turns a conformant server that ends
connections every N requests into an unavailable cache. Mounted as the
client's transport, :class:`H2Transport` keeps httpx's API for those callers
and gives them :class:`~.h2client.H2Client`'s behaviour: one client, one
behaviour (issues 12 and 16). Transport failures become httpx's exception
classes, named after the stage they broke at.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from sdcp_conformance.transport.exchange import MAX_RESPONSE_BYTES
from sdcp_conformance.transport.failures import FailureKind, Stage, TransportFailure
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions
from sdcp_conformance.transport.origins import H2Origins

_NOT_FORWARDED = frozenset({"host", "content-length", "connection", "transfer-encoding", "keep-alive",
                            "accept-encoding", "upgrade", "proxy-connection"})
"""Headers H2Client sets itself, HTTP/2 forbids (RFC 9113 §8.2.2), or that would invite a compressed body."""


class H2Transport(httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=H2Transport(cert, key, ca))``: one :class:`H2Client` per origin."""

    def __init__(self, cert: Path | None, key: Path | None, ca: Path, *,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, http: HttpVersions = DEFAULT_HTTP) -> None:
        self._origins = H2Origins(cert, key, ca, max_response_bytes=max_response_bytes, http=http)

    def _client(self, url: httpx.URL) -> H2Client:
        if url.scheme != "https":
            raise httpx.UnsupportedProtocol(f"SDCP is HTTPS only (§5.1), not {url.scheme!r}")
        return self._origins.origin_client(url.host, url.port or 443)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        client = self._client(request.url)
        body = await request.aread()
        headers = {name: value for name, value in request.headers.items() if name.lower() not in _NOT_FORWARDED}
        try:
            response = await client.request(request.method, request.url.raw_path.decode("ascii"), body or None,
                                            headers=headers, retry=False, timeout=_deadline(request))
        except TransportFailure as failure:
            raise _httpx_error(failure, request) from failure
        return httpx.Response(response.status, headers=list(response.headers), content=response.body,
                              request=request, extensions={"http_version": _HTTP_VERSION[self._origins.http]})

    async def aclose(self) -> None:
        await self._origins.aclose()


_HTTP_VERSION = {"2": b"HTTP/2", "both": b"HTTP/2", "3": b"HTTP/3"}


def _deadline(request: httpx.Request) -> float | None:
    """httpx's per-phase timeouts as one deadline for the whole exchange (connect + read)."""
    timeout = request.extensions.get("timeout") or {}
    connect, read = timeout.get("connect"), timeout.get("read")
    if connect is None and read is None:
        return None
    return (connect or 0.0) + (read or 0.0)


def _httpx_error(failure: TransportFailure, request: httpx.Request) -> httpx.TransportError:
    message = failure.describe()
    if failure.kind is FailureKind.TIMEOUT:
        connecting = failure.stage in (Stage.TCP_TIMEOUT, Stage.TLS_STALLED, Stage.H2_PREFACE)
        return (httpx.ConnectTimeout if connecting else httpx.ReadTimeout)(message, request=request)
    if failure.kind is FailureKind.REFUSED:
        return httpx.ConnectError(message, request=request)
    return httpx.RemoteProtocolError(message, request=request)


__all__ = ["H2Transport"]
