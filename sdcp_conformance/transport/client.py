"""The harness's HTTP/2 client: httpx with a client certificate, timeouts, typed bodies and retries.

Every call has connect/read/write/pool timeouts and an overall deadline. A
response must come over HTTP/2 (§5.1); success bodies decode as CBOR and
problems as RFC 9457 documents (P1-ERR-1). Transport failures are classified
(:class:`FailureKind`), with the TLS 1.3 subtlety that a refused client
certificate only shows on the first request of a connection. For the
high-volume traffic of the statistical suites see :mod:`.h2client`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from sdcp_conformance.errors import InvalidArgument, MalformedMessage, SdcpConformanceError
from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.problem import Problem, parse_problem
from sdcp_conformance.transport.tls import client_ssl_context

UPLOAD_CHUNK = 64 * 1024
"""Bodies are handed to httpx in chunks: httpcore re-slices one big ``bytes`` per frame (O(n²))."""


class FailureKind(enum.Enum):
    """How a request failed below HTTP."""

    REFUSED = "refused"
    """Handshake refused, or the connection died before the first response on it."""
    TIMEOUT = "timeout"
    CONNECTION_LOST = "connection-lost"
    """A stream reset, a GOAWAY, or a connection that had answered before was closed."""
    NOT_HTTP2 = "not-http2"
    """The peer answered, but not over HTTP/2 (§5.1)."""


class TransportFailure(SdcpConformanceError):
    """A request got no HTTP/2 response; ``kind`` says why, ``attempts`` how often it was tried."""

    def __init__(self, kind: FailureKind, detail: str, *, attempts: int = 1) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail
        self.attempts = attempts


@dataclass(frozen=True)
class Timeouts:
    """Seconds; ``read`` covers the 30 s long-poll of ``GET output`` (P1-OUT-1) with margin."""

    connect: float = 5.0
    read: float = 35.0
    write: float = 10.0
    total: float = 60.0
    """Deadline of one attempt, whatever the phase."""

    def httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.connect)


@dataclass(frozen=True)
class ClientResponse:
    """A response with its body read whole."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    attempts: int = 1

    @property
    def ok(self) -> bool:
        """RFC 9110 classes: any 2xx is success (P1-MSG-4)."""
        return 200 <= self.status < 300

    @property
    def content_type(self) -> str | None:
        return self.header("content-type")

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    @property
    def problem(self) -> Problem | None:
        """The problem document, if the body is one (raises MalformedMessage if it is a bad one)."""
        return parse_problem(self.status, self.content_type, self.body)

    def message(self) -> Any:
        """The decoded ``application/sdcp+cbor`` body; MalformedMessage if it is not one."""
        media = (self.content_type or "").split(";", 1)[0].strip().lower()
        if media != SDCP_MEDIA_TYPE:
            raise MalformedMessage(f"expected {SDCP_MEDIA_TYPE}, got {self.content_type!r}")
        return codec.decode(self.body)


def is_retry_safe(method: str, path: str) -> bool:
    """Whether the draft makes a request safe to repeat.

    §6.9: "proposals and their verdicts are idempotent per round, so a drafter
    retries a proposal whose verdict it did not receive". D-CLI-1: GET is
    safe by RFC 9110 §9.2.1, so output reads are retried too; nothing else is
    (PUT …/drafter and POST sessions change state the harness wants to observe once).
    """
    return method == "GET" or (method == "POST" and path.rstrip("/").endswith("proposals"))


MAX_ATTEMPTS = 3
"""D-CLI-2: a retry-safe request is sent at most three times, immediately, on a fresh stream."""


def is_retryable_status(status: int) -> bool:
    """P1-DRF-5: a lost verdict (transport error, timeout, 5xx, 429) is retried; a 4xx is final."""
    return status >= 500 or status == 429


async def send_with_retries(attempt: Callable[[], Awaitable[ClientResponse]], *, attempts: int) -> ClientResponse:
    """Call ``attempt`` up to ``attempts`` times while it fails retryably (P1-DRF-5).

    A refused handshake is final: retrying it cannot succeed.
    """
    for number in range(1, attempts + 1):
        try:
            response = await attempt()
        except TransportFailure as failure:
            if number == attempts or failure.kind is FailureKind.REFUSED:
                failure.attempts = number
                raise
            continue
        if number == attempts or not is_retryable_status(response.status):
            return dataclasses.replace(response, attempts=number)
    raise InvalidArgument(f"attempts must be at least 1, not {attempts}")


class SdcpClient:
    """An async HTTP/2 client for one peer, authenticated as one party (D-CLI-3: async only).

    ``async with SdcpClient(base_uri, cert, key, ca) as client: await client.request(...)``.
    """

    def __init__(
        self,
        base_uri: str,
        cert: Path | None,
        key: Path | None,
        ca: Path,
        *,
        timeouts: Timeouts | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self.base_uri = base_uri if base_uri.endswith("/") else base_uri + "/"
        self.timeouts = timeouts or Timeouts()
        self.max_attempts = max_attempts
        self._http = httpx.AsyncClient(
            http1=False,
            http2=True,
            verify=client_ssl_context(cert, key, ca),
            timeout=self.timeouts.httpx(),
        )
        self._answered = False
        """Whether the current connection has answered anything (see :func:`classify`)."""

    async def __aenter__(self) -> SdcpClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: dict[str, str] | None = None,
        retry: bool | None = None,
    ) -> ClientResponse:
        """Send one request (path relative to the base URI) and read the whole response.

        ``retry`` defaults to :func:`is_retry_safe`; a refused handshake is never retried.
        """
        retry = is_retry_safe(method, "/" + path) if retry is None else retry
        attempts = self.max_attempts if retry else 1
        return await send_with_retries(lambda: self._attempt(method, path, body, headers), attempts=attempts)

    async def send_message(self, method: str, path: str, message: Any, *, retry: bool | None = None) -> ClientResponse:
        """Encode ``message`` deterministically (P1-MSG-1) and send it as application/sdcp+cbor."""
        headers = {"content-type": SDCP_MEDIA_TYPE, "accept": SDCP_MEDIA_TYPE}
        return await self.request(method, path, codec.encode(message), headers=headers, retry=retry)

    async def _attempt(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str] | None
    ) -> ClientResponse:
        url = self.base_uri + path.lstrip("/")
        all_headers = dict(headers or {})
        content: bytes | AsyncIterator[bytes] | None = body
        if body is not None and len(body) > UPLOAD_CHUNK:
            all_headers["content-length"] = str(len(body))
            content = _chunks(body)
        try:
            async with asyncio.timeout(self.timeouts.total):
                response = await self._http.request(method, url, content=content, headers=all_headers)
        except (httpx.TransportError, TimeoutError) as exc:
            kind = classify(exc, answered_before=self._answered)
            self._answered = False  # whatever connection comes next has not answered yet
            raise TransportFailure(kind, f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        self._answered = True
        if response.http_version != "HTTP/2":
            raise TransportFailure(FailureKind.NOT_HTTP2, f"{url} answered {response.http_version}")
        return ClientResponse(
            response.status_code,
            tuple((k.lower(), v) for k, v in response.headers.multi_items()),
            response.content,
        )


def classify(exc: BaseException, *, answered_before: bool) -> FailureKind:
    """Name a transport failure.

    With TLS 1.3 the client finishes its handshake before the server has
    checked the client certificate, so a refusal arrives as an alert, a reset
    or EOF on the first read or write, not as a connect error. Hence a failure
    on a connection that never answered is REFUSED, unless the peer showed it
    had accepted the connection by speaking HTTP/2 to us (GOAWAY, RST_STREAM).
    An abrupt close of a fresh connection is indistinguishable from a refusal.
    """
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return FailureKind.TIMEOUT
    text = str(exc)
    if isinstance(exc, httpx.ConnectError) or "alert" in text.lower():
        return FailureKind.REFUSED
    if answered_before or any(event in text for event in _H2_EVENTS_FROM_PEER):
        return FailureKind.CONNECTION_LOST
    return FailureKind.REFUSED


_H2_EVENTS_FROM_PEER = ("ConnectionTerminated", "StreamReset")
"""h2 events httpcore quotes in its errors; only an accepted connection produces them."""


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    view = memoryview(body)
    for start in range(0, len(view), UPLOAD_CHUNK):
        yield bytes(view[start : start + UPLOAD_CHUNK])


__all__ = [
    "MAX_ATTEMPTS",
    "ClientResponse",
    "FailureKind",
    "SdcpClient",
    "Timeouts",
    "TransportFailure",
    "classify",
    "is_retry_safe",
    "is_retryable_status",
    "send_with_retries",
]
