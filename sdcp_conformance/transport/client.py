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

from typing import Any

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


class SdcpClient(H2Client):
    """An async HTTP/2 client for one peer, authenticated as one party (D-CLI-3: async only).

    ``async with SdcpClient(base_uri, cert, key, ca) as client: await client.request(...)``: an
    :class:`~.h2client.H2Client` (``retry`` defaults to :func:`is_retry_safe`; a refused handshake is
    never retried; ``timeout`` overrides the attempt's deadline) that also sends typed messages.
    """

    async def send_message(self, method: str, path: str, message: Any, *, retry: bool | None = None) -> ClientResponse:
        """Encode ``message`` deterministically (P1-MSG-1) and send it as application/sdcp+cbor."""
        headers = {"content-type": SDCP_MEDIA_TYPE, "accept": SDCP_MEDIA_TYPE}
        return await self.request(method, path, codec.encode(message), headers=headers, retry=retry)


__all__ = [
    "MAX_ATTEMPTS",
    "ClientResponse",
    "ConnectionInfo",
    "FailureKind",
    "SdcpClient",
    "Stage",
    "Timeouts",
    "TransportFailure",
    "is_retry_safe",
    "is_retryable_status",
    "send_with_retries",
]
