"""Implementations of :class:`~.append.ObjectClient`: in-process, over the lean HTTP/2 client, over httpx."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

import httpx

from sdcp_conformance.cache.app import LEASE_HEADER
from sdcp_conformance.cache.append import CacheReply, CacheTransportError
from sdcp_conformance.transport.failures import TransportFailure
from sdcp_conformance.transport.origins import H2Origins
from sdcp_conformance.transport.types import Handler, Request, Response

DEFAULT_TIMEOUT = 10.0
"""Seconds any one cache request may take over the network before it counts as lost."""


def _conditional_headers(
    if_match: str | None, if_none_match: str | None, lease_ms: int | None
) -> list[tuple[str, str]]:
    headers = []
    if if_match is not None:
        headers.append(("if-match", if_match))
    if if_none_match is not None:
        headers.append(("if-none-match", if_none_match))
    if lease_ms is not None:
        headers.append((LEASE_HEADER, str(lease_ms)))
    return headers


class _ObjectVerbs:
    """GET, conditional PUT and DELETE in terms of one ``_send``; subclasses say how a request travels."""

    async def get(self, uri: str) -> CacheReply:
        return await self._send("GET", uri, None, [])

    async def put(self, uri: str, body: bytes, *, if_match: str | None = None, if_none_match: str | None = None,
                  lease_ms: int | None = None) -> CacheReply:
        headers = _conditional_headers(if_match, if_none_match, lease_ms)
        return await self._send("PUT", uri, body, headers)

    async def delete(self, uri: str) -> CacheReply:
        return await self._send("DELETE", uri, None, [])

    async def _send(self, method: str, uri: str, body: bytes | None, headers: list[tuple[str, str]]) -> CacheReply:
        raise NotImplementedError


class HandlerObjectClient(_ObjectVerbs):
    """Calls a cache handler directly, as the embedded stack and unit tests do.

    A response carrying a transport fault becomes :class:`CacheTransportError`,
    exactly as the same fault on the network would.
    """

    def __init__(self, handler: Handler, *, peer_identity: str | None = None) -> None:
        self._handler = handler
        self._peer = peer_identity

    async def _send(self, method: str, uri: str, body: bytes | None, headers: list[tuple[str, str]]) -> CacheReply:
        parts = urlsplit(uri)
        request = Request(method, unquote(parts.path) or "/", parts.query, tuple(headers), body or b"", self._peer)
        return _reply(method, uri, await self._handler(request))


def _reply(method: str, uri: str, response: Response) -> CacheReply:
    if response.fault is not None:
        raise CacheTransportError(f"{method} {uri}: {response.fault.value}")
    return CacheReply(response.status, response.body, response.header("etag"))


class HttpxObjectClient(_ObjectVerbs):
    """Talks to an MLC over an ``httpx.AsyncClient`` the caller configured (TLS, certificates).

    Every request has a timeout; any transport failure becomes :class:`CacheTransportError`.
    """

    def __init__(self, client: httpx.AsyncClient, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._client = client
        self._timeout = timeout

    async def _send(self, method: str, uri: str, body: bytes | None, headers: list[tuple[str, str]]) -> CacheReply:
        try:
            response = await self._client.request(method, uri, content=body, headers=headers, timeout=self._timeout)
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            # A cache-ref that is no usable URL is as unreachable as a dead cache.
            raise CacheTransportError(f"{method} {uri}: {exc!r}") from exc
        return CacheReply(response.status_code, response.content, response.headers.get("etag"))


class H2ObjectClient(_ObjectVerbs):
    """Talks to MLCs through :class:`~sdcp_conformance.transport.origins.H2Origins` (no httpx layer: a
    verifier appends to a commit log and reads draft rows every round, so the client's cost is per round).

    Every request has a timeout; any transport failure becomes :class:`CacheTransportError`.
    """

    def __init__(self, origins: H2Origins, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._origins = origins
        self._timeout = timeout

    async def _send(self, method: str, uri: str, body: bytes | None, headers: list[tuple[str, str]]) -> CacheReply:
        try:
            response = await self._origins.request(method, uri, body, headers=dict(headers), timeout=self._timeout)
        except TransportFailure as exc:
            raise CacheTransportError(f"{method} {uri}: {exc.describe()}") from exc
        return CacheReply(response.status, response.body, response.header("etag"))


__all__ = ["DEFAULT_TIMEOUT", "H2ObjectClient", "HandlerObjectClient", "HttpxObjectClient"]
