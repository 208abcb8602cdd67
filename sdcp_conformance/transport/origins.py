"""One :class:`~.h2client.H2Client` per origin, for callers that address absolute URIs (cache-refs, routers).

A party talks to several servers (the MLC, its router, other parties) with
one certificate; this keeps a lean HTTP/2 client per ``(host, port)`` and
sends each request to the right one, with no httpx layer in between.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from sdcp_conformance.transport.exchange import MAX_RESPONSE_BYTES, ClientResponse, Timeouts
from sdcp_conformance.transport.failures import FailureKind, TransportFailure
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions, client_for


class H2Origins:
    """``await origins.request("GET", "https://cache:8445/cache/x")``: the H2Client of that origin sends it."""

    def __init__(self, cert: Path | None, key: Path | None, ca: Path, *,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, http: HttpVersions = DEFAULT_HTTP) -> None:
        self._cert, self._key, self._ca = cert, key, ca
        self.http = http
        """What the origins serve (:mod:`.listeners`): their clients speak HTTP/3 where they serve nothing else."""
        self._max_response_bytes = max_response_bytes
        self._clients: dict[tuple[str, int], H2Client] = {}

    def client_for(self, uri: str) -> tuple[H2Client, str]:
        """The origin's client and the request target (path and query) of ``uri``."""
        try:
            parts = urlsplit(uri)
            port = parts.port or 443
        except ValueError as exc:
            raise TransportFailure(FailureKind.REFUSED, f"{uri!r} is not a usable URI: {exc}") from exc
        if parts.scheme != "https" or not parts.hostname:
            raise TransportFailure(FailureKind.REFUSED, f"{uri!r} is not an https URI (§5.1)")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.origin_client(parts.hostname, port), target

    def origin_client(self, hostname: str, port: int) -> H2Client:
        """The client of the origin ``(hostname, port)``, made on first use (one attempt per request)."""
        origin = (hostname, port)
        client = self._clients.get(origin)
        if client is None:
            host = f"[{hostname}]" if ":" in hostname else hostname
            client = self._clients[origin] = client_for(
                self.http, f"https://{host}:{port}/", self._cert, self._key, self._ca, timeouts=Timeouts(),
                max_attempts=1, max_response_bytes=self._max_response_bytes)
        return client

    async def request(self, method: str, uri: str, body: bytes | None = None, *,
                      headers: dict[str, str] | None = None, timeout: float | None = None) -> ClientResponse:
        client, target = self.client_for(uri)
        return await client.request(method, target, body, headers=headers, retry=False, timeout=timeout)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


__all__ = ["H2Origins"]
