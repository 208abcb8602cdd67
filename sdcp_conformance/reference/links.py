"""Network adapters for the reference roles: the MLC and the router over HTTP/2 + mTLS.

They implement the narrow ports of each role (for instance
:mod:`sdcp_conformance.reference.verifier.ports`) on top of one shared
``httpx.AsyncClient`` per party, authenticated with that party's certificate.
Every call has a timeout.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from sdcp_conformance.cache.append import AppendStatus, ConditionalAppendError, ObjectClient, append_record
from sdcp_conformance.cache.clients import H2ObjectClient, HttpxObjectClient
from sdcp_conformance.cache.commit_log import record_from_item
from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Event
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.reference.verifier.ports import AppendOutcome, CacheUnavailable
from sdcp_conformance.transport.httpx_transport import H2Transport
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions
from sdcp_conformance.transport.origins import H2Origins

DEFAULT_TIMEOUT_S = 10.0


def party_http_client(cert: Path, key: Path, ca: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                      http: HttpVersions = DEFAULT_HTTP) -> httpx.AsyncClient:
    """An HTTP/2 (HTTP/3 where the peers serve only that, ``http``) client over TLS 1.3 that presents the party's
    certificate (P1-TLS-1).

    httpx's API on the project's own HTTP/2 client (:class:`~sdcp_conformance.transport.httpx_transport.H2Transport`):
    the same graceful-GOAWAY handling, bounded reads and failure stages as the harness (issue 12).
    """
    return httpx.AsyncClient(transport=H2Transport(cert, key, ca, http=http), timeout=httpx.Timeout(timeout_s))


def instance_id(base_uri: str) -> str:
    """P1-RTR-1: "{id} is the base64url (no padding) of the instance's base URI"."""
    return base64.urlsafe_b64encode(base_uri.encode()).rstrip(b"=").decode()


class MlcCache:
    """The verifier's :class:`~sdcp_conformance.reference.verifier.ports.Cache` over a real MLC."""

    def __init__(self, http: httpx.AsyncClient | H2Origins, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._objects: ObjectClient = (H2ObjectClient(http, timeout=timeout_s) if isinstance(http, H2Origins)
                                       else HttpxObjectClient(http, timeout=timeout_s))

    async def get(self, uri: str) -> bytes:
        try:
            reply = await self._objects.get(uri)
        except SdcpConformanceError as exc:
            raise CacheUnavailable(str(exc)) from exc
        if reply.status != 200:
            raise CacheUnavailable(f"GET {uri} answered {reply.status}")
        return reply.body

    async def append_record(self, log_uri: str, record: Mapping[str, Any], epoch: int) -> AppendOutcome:
        """P1-LOG-1 conditional append, read back per §6.8 whether or not the MLC enforces fences."""
        del epoch  # the record carries its epoch; the helper compares it with the fences
        try:
            outcome = await append_record(self._objects, log_uri, record_from_item(dict(record)))
        except ConditionalAppendError:
            return AppendOutcome.FAILED
        return AppendOutcome.APPENDED if outcome.status is AppendStatus.APPENDED else AppendOutcome.FENCED


class HttpRouterLink:
    """The verifier's calls to its router: events (§6.5.2) and status reports (§6.1)."""

    def __init__(self, http: httpx.AsyncClient, router_uri: str, own_uri: str) -> None:
        self._http = http
        self._router = router_uri if router_uri.endswith("/") else router_uri + "/"
        self._own = own_uri

    async def post_event(self, event: Event) -> None:
        await self._send("POST", "events", event.to_cbor())

    async def put_status(self, status: Mapping[str, Any]) -> None:
        await self._send("PUT", f"instances/{instance_id(self._own)}/status", encode(dict(status)))

    async def _send(self, method: str, path: str, body: bytes) -> None:
        response = await self._http.request(
            method, self._router + path, content=body, headers={"content-type": SDCP_MEDIA_TYPE}
        )
        if not response.is_success:
            raise SdcpConformanceError(f"{method} {path} at the router answered {response.status_code}")


__all__ = ["DEFAULT_TIMEOUT_S", "HttpRouterLink", "MlcCache", "instance_id", "party_http_client"]
