"""The reference roles' HTTP/2 client: one peer, one identity, typed bodies and the draft's retry policy.

:class:`SdcpClient` keeps the API the roles were written against (``request``,
``send_message``, :class:`FailureKind`, D-CLI-1/2 retries) and runs on
:class:`~.h2client.H2Client`, so the roles and the harness share one client
and one behaviour: graceful GOAWAY handled as RFC 9113 §6.8 says, bounded
reads, failures classified by stage (:mod:`.failures`). A response must come
over HTTP/2 (§5.1); success bodies decode as CBOR and problems as RFC 9457
documents (P1-ERR-1).

The exchange types (:class:`ClientResponse`, :class:`Timeouts`, the retry
functions) live in :mod:`.exchange` and the failure types in
:mod:`.failures`; they are re-exported here, where callers import them from.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Protocol, cast

from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.exchange import (
    MAX_ATTEMPTS,
    ClientResponse,
    Timeouts,
    is_retry_safe,
    is_retryable_status,
    send_with_retries,
)
from sdcp_conformance.transport.failures import ConnectionInfo, FailureKind, Stage, TransportFailure
from sdcp_conformance.transport.h2client import H2Client


class _Requests(Protocol):
    async def request(self, method: str, path: str, body: bytes | None = None, *,
                      headers: dict[str, str] | None = None, retry: bool | None = None) -> ClientResponse: ...


class SdcpMessages:
    """Typed messages over a client's ``request``: mixed into the HTTP/2 and the HTTP/3 client alike."""

    async def send_message(self: _Requests, method: str, path: str, message: Any, *,
                           retry: bool | None = None) -> ClientResponse:
        """Encode ``message`` deterministically (P1-MSG-1) and send it as application/sdcp+cbor."""
        headers = {"content-type": SDCP_MEDIA_TYPE, "accept": SDCP_MEDIA_TYPE}
        return await self.request(method, path, codec.encode(message), headers=headers, retry=retry)


class SdcpClient(SdcpMessages, H2Client):
    """An async HTTP/2 client for one peer, authenticated as one party (D-CLI-3: async only).

    ``async with SdcpClient(base_uri, cert, key, ca) as client: await client.request(...)``: an
    :class:`~.h2client.H2Client` (``retry`` defaults to :func:`is_retry_safe`; a refused handshake is
    never retried; ``timeout`` overrides the attempt's deadline) that also sends typed messages.
    """


def sdcp_client(http: str, base_uri: str, cert: Path | None, key: Path | None, ca: Path,
                **options: Any) -> SdcpClient:
    """An :class:`SdcpClient` of a peer serving ``http`` ("2", "3" or "both"; :mod:`.listeners`): over HTTP/3 where
    the peer serves nothing else, with the same interface."""
    if http != "3":
        return SdcpClient(base_uri, cert, key, ca, **options)
    return cast(SdcpClient, _sdcp_h3_client()(base_uri, cert, key, ca, **options))


@functools.cache
def _sdcp_h3_client() -> type:
    from sdcp_conformance.transport.h3_client import H3Client  # aioquic only where HTTP/3 is spoken

    class SdcpH3Client(SdcpMessages, H3Client):
        """:class:`SdcpClient` over HTTP/3."""

    return SdcpH3Client


__all__ = [
    "MAX_ATTEMPTS",
    "ClientResponse",
    "ConnectionInfo",
    "FailureKind",
    "SdcpClient",
    "SdcpMessages",
    "Stage",
    "Timeouts",
    "TransportFailure",
    "is_retry_safe",
    "is_retryable_status",
    "sdcp_client",
    "send_with_retries",
]
